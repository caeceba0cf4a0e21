"""Everyday English for judging the bundled model: common words that should be one token each, and simple
sentences whose words it should guess (one word-piece masked at a time)."""

from __future__ import annotations

_WORDS = """
the a an and or but if because so not no yes this that these those there here what who where when why how i
you he she it we they me him her us them my your his its our their mine yours is are was were be been being am
have has had do does did will would can could should may might must shall go goes went gone come came get got
make made take took see saw seen know knew think thought say said tell told give gave find found want need
like love hate feel felt look looked use used work worked call called try tried ask asked help helped play
played run ran walk walked talk talked eat ate drink drank sleep slept sit sat stand stood read write wrote
open opened close closed buy bought pay paid sell sold send sent bring brought start stopped stop begin began
keep kept leave left live lived move moved turn turned show showed hear heard wait waited learn learned teach
taught meet met win won lose lost cut put set let mean cat dog animal bird fish horse cow chicken pig sheep
mouse man woman child children boy girl baby friend family mother father brother sister son daughter people
person house home room door window wall floor table chair bed kitchen garden school street road city town
country car bus train plane ship boat bike water food bread milk tea coffee apple egg meat rice day night
morning evening week month year time hour minute today tomorrow yesterday sun moon star sky rain snow wind
tree flower grass river sea mountain book paper letter word name story music song game money job work office
shop store market head face eye eyes ear nose mouth hand hands foot feet arm leg heart body good bad big small
little long short old new young high low hot cold warm cool happy sad tired hungry fast slow easy hard early
late right wrong true false full empty clean dirty rich poor strong weak red blue green yellow black white
brown one two three four five six seven eight nine ten first second last next very too also only just still
again always never often sometimes now then soon in on at to from with without for of by about into over under
after before between through
"""
EVERYDAY_WORDS = tuple(_WORDS.split())  # a few hundred common nouns, verbs, adjectives, function words

#: simple everyday sentences (lower case, as the tokenizer lower-cases anyway)
PROBE_SENTENCES = [
    "the cat sat on the mat.",
    "she went to the store yesterday.",
    "i like to drink coffee in the morning.",
    "the sun is shining and the sky is blue.",
    "he opened the door and walked into the room.",
    "we are going to the park after school.",
    "my brother plays football every weekend.",
    "the children were playing in the garden.",
    "please close the window because it is cold.",
    "they ate dinner at a small restaurant.",
    "the dog ran across the street.",
    "it was raining, so we stayed at home.",
    "my mother cooked chicken and rice for lunch.",
    "the train leaves the station at nine o'clock.",
    "he was too tired to walk any further.",
    "she reads a book before she goes to bed.",
    "the water in the river is very cold.",
    "we need to buy bread and milk.",
    "the little girl lost her red ball.",
    "can you help me carry these boxes?",
    "the teacher asked the students a question.",
    "my father works in a big office in the city.",
    "there are seven days in a week.",
    "the old man sat under the tree.",
    "i have two brothers and one sister.",
    "the birds sing early in the morning.",
    "he drove his car to work.",
    "the baby is sleeping in the next room.",
    "we watched a movie on friday night.",
    "the animal did not cross the street because it was too tired.",
]
