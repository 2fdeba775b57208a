import pandas as pd
import streamlit as st

from model.attention import worked_example
from ui.text import md
from ui import download_all, guarded, page, show_figure
from viz.views import FULL_RESOLUTION, overview_figure, pattern_of_head, scaling_figures, sentence_labels, stages_of_head

view = page("Attention", ":material/grid_on:")
trace, s = view.trace, view.settings
st.markdown(
    "Each token asks a **query** (q) and offers a **key** (k). Their dot product says how well they match; "
    "dividing by √d_k keeps those scores in a range where the softmax still spreads its attention; the mask "
    "removes keys a query must not see; the softmax turns each row into weights that sum to 1. "
    "Below, every step of the layer and heads chosen in the sidebar, for the sentence shown."
)

with guarded():
    stages = trace.stages(s.layer)
    b, labels = s.sent, sentence_labels(trace, s.sent)
    d_k = trace.d_head
    columns = st.columns(4)
    columns[0].latex(r"S = Q K^{\top}")
    columns[1].latex(r"S' = S / \sqrt{d_k} = S / \sqrt{%d}" % d_k if s.scale else r"S' = S \;\text{(unscaled)}")
    columns[2].latex(r"S''_{ij} = \begin{cases} S'_{ij} & \text{key } j \text{ allowed} \\ -\infty & \text{masked} \end{cases}")
    columns[3].latex(r"A = \operatorname{softmax}(S'' / T),\; T = %g" % s.temp)

    long_input = len(labels) > FULL_RESOLUTION
    for head in s.heads:
        show_figure(stages_of_head(trace, b, s.layer, head, stages), f"stages-L{s.layer}-H{head}")
        if long_input:
            st.caption(f"More than {FULL_RESOLUTION} tokens: the panels show means of blocks; the full-resolution pattern follows.")
            show_figure(pattern_of_head(trace, b, s.layer, head, stages), f"pattern-L{s.layer}-H{head}")
        if stages.fully_masked_rows[b, head].any():
            st.caption("Rows whose every key is masked attend to nothing: their weights are all 0 (no NaN).")

    head = s.heads[0]
    st.subheader("Why divide by √d_k?")
    st.markdown(
        f"Without scaling, dot products of {d_k}-dimensional vectors grow with d_k, and the softmax of large "
        "numbers puts almost all weight on one key. Compare the two patterns and how peaked each row is: "
        "**entropy** (bits, higher = spread out) and the **largest weight** of the row."
    )
    (scaled_id, scaled_fig), (unscaled_id, unscaled_fig), (stats_id, stats_fig) = scaling_figures(trace, b, s.layer, head).items()
    left, right = st.columns(2)
    with left:
        show_figure(scaled_fig, scaled_id)
    with right:
        show_figure(unscaled_fig, unscaled_id)
    show_figure(stats_fig, stats_id)

    st.subheader("A worked example")
    n = len(trace.tokens[b])
    left, right = st.columns(2)
    query = left.selectbox("Query token", range(n), index=min(n - 1, 2), format_func=lambda i: f"{i}: {labels[i]}", key="w_example_query")
    key = right.selectbox("Key token", range(n), index=0, format_func=lambda i: f"{i}: {labels[i]}", key="w_example_key")
    step = worked_example(stages, b, head, query, key)
    rows = [
        ("q · k", "dot product of the query and key vectors", f"{step['raw']:.4f}"),
        (f"÷ {step['scale']:.4g}", "√d_k" if s.scale else "no scaling", f"{step['scaled']:.4f}"),
        ("mask", "allowed" if step["allowed"] else "masked → −∞", "kept" if step["allowed"] else "−∞"),
        (f"÷ T = {step['temperature']:g}", "temperature", f"{step['logit']:.4f}"),
        ("exp(· − row max)", f"row max = {step['shift']:.4f}", f"{step['exp']:.4f}"),
        ("÷ row sum", f"Σ exp over allowed keys = {step['row_sum']:.4f}", f"{step['weight']:.4f}"),
    ]
    st.dataframe(pd.DataFrame(rows, columns=["step", "what", "value"]), hide_index=True, width="stretch")
    st.caption(f"Head {head}, layer {s.layer}: “{md(labels[query])}” gives weight {step['weight']:.4f} to “{md(labels[key])}”.")

    st.subheader("Every head of every layer")
    st.markdown("Small multiples of the softmax pattern; large inputs are averaged into blocks. Open one below.")
    show_figure(overview_figure(trace, b), "overview-all-heads")
    options = [(layer, h) for layer in range(trace.n_layers) for h in range(trace.n_heads)]

    def open_head():
        layer, h = st.session_state["w_open"]
        st.session_state["w_layer"], st.session_state["w_heads"] = layer, [h]

    st.selectbox("Open a head", options, format_func=lambda lh: f"layer {lh[0]} · head {lh[1]}", key="w_open", index=None, on_change=open_head, placeholder="choose a layer and head")

download_all("attention")
