"""A small app for the head view's browser tests: the component alone, on the toy model, no sidebar.

Run: streamlit run tests/apps/head_view_app.py. The query string holds text, layer, heads, words,
tok (a random toy model with that tokenizer instead of the trained one), pin (pinned position) and cell (query,key of the worked example).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamlit as st

from model import load_model
from model.attention import worked_example
from ui.head_view import Downloads, head_view
from viz.head_view import head_view_data

st.set_page_config(page_title="Head view test app", layout="wide")


@st.cache_resource
def model(tokenizer):
    return load_model("toy-random", tokenizer=tokenizer) if tokenizer else load_model("toy")


def number(name, default=None):
    try:
        return int(st.query_params[name])
    except (KeyError, ValueError):
        return default


if "pinned" not in st.session_state:
    st.session_state["pinned"] = number("pin")
    cell = st.query_params.get("cell", "")
    st.session_state["pair"] = tuple(int(x) for x in cell.split(",")) if cell.count(",") == 1 else None

text = st.query_params.get("text", "The cat sat on the mat because it was tired.")
layer = number("layer", 0)
heads = [int(h) for h in st.query_params.get("heads", "0,1,2,3").split(",")]
words = st.toggle("Word level", value=st.query_params.get("words") == "1", key="words")
trace = model(st.query_params.get("tok", "")).trace([text])
stages = trace.stages(layer)
view = head_view_data(trace, 0, layer, heads, words=words, stages=stages)


def on_pin(index):
    st.session_state["pinned"] = index
    if index is None or (st.session_state["pair"] or (None,))[0] != index:
        st.session_state["pair"] = None


def on_pair(query, key):
    st.session_state["pinned"], st.session_state["pair"] = query, (query, key)


head_view(view, pinned=st.session_state["pinned"], pair=st.session_state["pair"], on_pin=on_pin, on_pair=on_pair, downloads=Downloads(f"head-view-L{layer}"))
pinned, pair = st.session_state["pinned"], st.session_state["pair"]

st.query_params["words"] = "1" if words else "0"
if pinned is None:
    st.query_params.pop("pin", None)
else:
    st.query_params["pin"] = str(pinned)
if pair is None:
    st.query_params.pop("cell", None)
else:
    st.query_params["cell"] = f"{pair[0]},{pair[1]}"
    if not words:
        step = worked_example(stages, 0, heads[0], *pair)
        st.markdown(f"Worked example, head {heads[0]}: query {pair[0]} → key {pair[1]}, weight {step['weight']:.4f}")
