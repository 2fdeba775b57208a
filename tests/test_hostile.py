"""Hostile and unusual input: it keeps working, shows text as text, and says what it changed."""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apptest_helpers import chart_titled, charts, heatmaps
from test_app import on_page, start

from model import InputError, load_model
from model.tokenizers import is_visible_text
from viz.focus import FOCUS_TOKENS, focus_range
from viz.heatmap import block_weights
from ui.text import badge_label, md

SCRIPT = "<script>alert(1)</script> <img src=x onerror=alert(2)> [link](http://evil.example) ![i](http://evil.example/x.png) $x^2$"
UNICODE = "Café 東京 🙂👍🏽 مرحبا שלום e\u0301 zero\u200bwidth bell\x07 tab\there"


def all_tick_texts(at):
    ticks = []
    for spec in charts(at):
        for name, axis in spec["layout"].items():
            if name.startswith(("xaxis", "yaxis")):
                ticks += axis.get("ticktext") or []
    return ticks


def test_html_and_markdown_in_the_text_are_shown_as_text():
    at = start({"text": SCRIPT, "model": "toy-random", "tok": "char"})
    at = on_page(at, "pages/3_Attention.py")
    ticks = all_tick_texts(at)
    assert "&lt;" in ticks and "&gt;" in ticks and "<" not in ticks
    assert not any("<" in t for t in ticks)
    at = on_page(at, "pages/4_Embeddings.py")
    message = next(i.value for i in at.info if "does not occur" in i.value)
    assert "\\[link\\]\\(http\u2060\\:" in message and "\\<script\\>" in message  # escaped and unlinked: not a link nor HTML
    assert "[link](" not in message


def test_every_page_takes_unicode_emoji_rtl_and_control_characters():
    for tokenizer in ("word", "char", "gpt2-bpe"):
        at = start({"text": UNICODE, "model": "toy-random", "tok": tokenizer})
        for path in ("pages/1_Tokens.py", "pages/3_Attention.py", "pages/4_Embeddings.py"):
            at = on_page(at, path)
            assert not at.error, (tokenizer, path, [e.value for e in at.error])
        at = on_page(at, "pages/3_Attention.py")
        ticks = all_tick_texts(at)
        if tokenizer == "gpt2-bpe":
            assert any("\\u200b" in t for t in ticks) and any("\\x07" in t for t in ticks)  # invisible made visible


def test_ten_thousand_characters_are_cut_to_the_context_with_a_notice():
    at = start()
    text = ("the cat sat on the mat . " * 400)[:10_000]
    at.sidebar.text_area(key="w_text").set_value(text).run()
    at = on_page(at, "pages/3_Attention.py")
    assert any("only the first 512" in i.value for i in at.info)
    blocks = heatmaps(chart_titled(at, ["head 0 ·", "blocks of 4×4 tokens"]))["softmax"]
    assert blocks.shape == (128, 128)  # side-by-side panels: blocks of 4×4 tokens
    whole = load_model("toy").trace([text]).stages(0).pattern[0, 0].numpy()
    weights = block_weights(whole, 128, masked=np.triu(np.ones((512, 512), dtype=bool), 1))  # what each block's queries give its keys
    np.testing.assert_allclose(np.nan_to_num(blocks), np.nan_to_num(weights), atol=1e-3)  # (values sent to 4 digits)
    np.testing.assert_allclose(np.nansum(blocks, axis=1), 1.0, atol=0.01)  # a row of blocks still sums to 1
    focus = heatmaps(chart_titled(at, ["head 0", "focus window"]))["focus window"]
    assert focus.shape == (FOCUS_TOKENS, FOCUS_TOKENS)  # every token of the window, at full resolution
    low, high = focus_range(512, 512 // 2)  # the window around the middle token by default
    np.testing.assert_allclose(np.nan_to_num(focus), whole[low:high, low:high], atol=1e-4)


def test_hundreds_of_sentences_are_bounded_with_a_notice():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("\n".join(f"the cat sat on mat number {i}" for i in range(200))).run()
    assert any("Only the first 32 of 200 sentences" in i.value for i in at.info)
    assert not at.exception


def test_duplicated_sentences_and_a_missing_target_word():
    at = start()
    at.sidebar.text_area(key="w_text").set_value("The cat sat.\nThe cat sat.").run()
    at = on_page(at, "pages/4_Embeddings.py")
    assert any("occurs in none" in w.value for w in at.warning)
    at.text_input(key="w_target").set_value("cat").run()
    assert chart_titled(at, ["“cat” after layer 1 (toy)"])  # the projection of the word followed


def test_local_folders_are_refused_unless_the_operator_allows_them(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTENTION_VIZ_ALLOW_LOCAL", raising=False)
    at = start({"model": str(tmp_path)})
    assert any("“model”" in i.value for i in at.info)
    at = on_page(at, "pages/3_Attention.py")
    assert chart_titled(at, ["toy · layer 0"])


def test_markdown_escape():
    assert md("**bold** [a](b) <i>") == "\\*\\*bold\\*\\* \\[a\\]\\(b\\) \\<i\\>"
    # st.badge escapes square brackets itself; a backslash typed before one stays escaped
    assert badge_label("'[CLS]' **x** \\[") == "'[CLS]' \\*\\*x\\*\\* \\\\["


def test_a_hidden_bracket_reads_as_typed_in_the_what_if_badge():
    """The badge's markdown (Streamlit adds the escapes of square brackets): one backslash before the
    hidden "[", which the page shows as "[" (escaped twice, it showed '\\[CLS\\]' for MiniLM's [CLS])."""
    at = on_page(start({"text": "The [cat] sat.", "hide": "0.2"}), "pages/3_Attention.py")
    body = next(m.proto.body for m in at.markdown if "-badge[" in m.proto.body)
    assert "hidden\\: '\\[' in sentence 1" in body and "\\\\[" not in body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4), st.sampled_from(["word", "char", "gpt2-bpe"]))
def test_the_trace_takes_any_unicode(texts, tokenizer):
    model = _models(tokenizer)
    try:
        trace = model.trace(texts, mask="causal+padding")
    except InputError:
        assert all(not is_visible_text(t) or not model.tokenizer.encode(t) for t in texts)
        return
    pattern = trace.stages(0).pattern
    assert not torch.isnan(pattern).any()
    rows = pattern.sum(-1)[trace.key_valid[:, None, :].expand(-1, trace.n_heads, -1)]
    np.testing.assert_allclose(rows.numpy(), 1, atol=1e-5)


_cache = {}


def _models(tokenizer):
    if tokenizer not in _cache:
        _cache[tokenizer] = load_model("toy-random", tokenizer=tokenizer)
    return _cache[tokenizer]


def test_a_sink_that_is_a_space_is_named_where_the_page_quotes_it():
    """The sink toggle's label quotes its tokens: a space token reads "(space)", never empty quotes."""
    from viz.content import Settings, attention_page, run_model
    from viz.labels import spaces_named

    assert (spaces_named(" "), spaces_named("   "), spaces_named(" the"), spaces_named("")) == ("(space)", "(3 spaces)", " the", "")
    view = Settings(text="你好世界 😀 hello")
    trace = run_model(load_model("toy"), view.sentences, view.display)
    assert attention_page(view, trace, overview=False).values["sinks"] == ["(space)"]
    at = on_page(start({"text": "你好世界 😀 hello"}), "pages/3_Attention.py")
    labels = [t.label.replace("\\", "") for t in at.toggle if t.label.startswith("Also hide")]  # markdown, escaped
    assert labels == ["Also hide “(space)” and renormalise"]
