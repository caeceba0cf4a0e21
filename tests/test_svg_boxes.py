"""The layout sweeps' SVG helper (scripts/svg_boxes.py): what it leaves out before chromium lays an export out."""

from scripts.svg_boxes import without_pixels

SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="700" height="500">'
    '<g class="heatmaplayer"><g class="hm"><image xmlns="http://www.w3.org/2000/svg" width="400" height="400" x="80"'
    ' y="60" preserveAspectRatio="none" xlink:href="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAA+gAAAPo"/></g></g>'
    '<image href="data:image/png;base64,AAAA" x="1" y="2" width="3" height="4"/>'
    '<a href="https://example.org/"><text x="10" y="20">data:image/png, as text</text></a></svg>'
)


def test_an_images_pixels_go_and_its_box_and_every_text_stay():
    out = without_pixels(SVG.encode())
    assert "base64" not in out and out.count("<image") == 2
    assert 'width="400" height="400" x="80" y="60" preserveAspectRatio="none" xlink:href=""/>' in out
    assert '<image href="" x="1" y="2" width="3" height="4"/>' in out
    assert '<a href="https://example.org/"><text x="10" y="20">data:image/png, as text</text></a>' in out
    assert without_pixels(out) == out
