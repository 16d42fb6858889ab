"""Doc-site markup is never a unit of an answer nor text of a snippet (issue 22 item 5): container fences
(VitePress, Docusaurus ``:::warning``), whole-line Hugo shortcodes, GitHub alert markers and heading ids.
On the frigate docs (Docusaurus) the lone line ``:::warning`` was the best-scored unit of a question."""

from __future__ import annotations

from query.answer.sentences import text_units
from query.search.snippets import display_text

PAGE = """## Detect {#detect}

:::warning

The default detect frame rate is 5 fps.

:::

> [!TIP]
> Use 5 fps for most cameras.

{{< figure src="detect.png" >}}

:::note Older versions
Version 0.12 used 10 fps.
:::

```yaml
detect:
  fps: 5
```
"""


def test_markup_lines_give_no_units_and_the_text_keeps_its_offsets() -> None:
    units = text_units(PAGE)
    assert [u.text for u in units if u.kind != "code"] == [
        "The default detect frame rate is 5 fps.", "> Use 5 fps for most cameras.", "Version 0.12 used 10 fps."]
    for unit in units:
        assert PAGE[unit.start:unit.end] == unit.text  # still verbatim: a claim quotes the chunk
        assert unit.headings == ("Detect",)
        assert ":::" not in unit.text and "{{" not in unit.text and "[!" not in unit.text


def test_a_snippet_shows_no_markup() -> None:
    shown = display_text(PAGE)
    for markup in (":::", "{{<", "[!TIP]", "{#detect}"):
        assert markup not in shown
    assert "Detect —" in shown and "Use 5 fps for most cameras." in shown


def test_a_link_whose_target_is_a_shortcode_shows_its_text() -> None:
    assert display_text('See [the guide]({{< relref "guide.md" >}}) first.') == "See the guide first."


def test_three_colons_inside_a_sentence_stay() -> None:
    assert display_text("Ratio 1:::2 is odd.") == "Ratio 1:::2 is odd."
    assert [u.text for u in text_units("Ratio 1:::2 is odd.")] == ["Ratio 1:::2 is odd."]
