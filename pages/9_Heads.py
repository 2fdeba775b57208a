import streamlit as st

from ui import ATTENTION, FIGURES, SENTENCE, formulas, guarded, md, open_clicked_head, page, show, show_notices, show_table
from ui.heads import position_badges
from viz.content.heads import ablation_section, heads_page, ranking_section


def body(context):
    s, trace, model = context.settings, context.trace, context.model
    with guarded():
        content = heads_page(s, trace, model, positions=position_badges(context))
        show(content, "head-grid", on_click=open_clicked_head())
        show_notices(content, "position-badges")
        st.caption("Click a head to open it below (it becomes the sidebar's layer and head).")
        with st.expander("Badge rules and every head's numbers"):
            for table in ("badge-rules", "head-summary", "position-shares"):
                show_table(content, table)

        v = content.values
        layer, head = v["open_layer"], v["open_head"]
        st.subheader(f"Layer {layer}, head {head}: weight is not what is sent")
        st.markdown("A key sends its value through the head's slice of the output projection, f(x) = v·W_O; Kobayashi et al. (2020) measure ‖α·f(x)‖.")
        formulas(r"\text{sent}_{ij} = \left\lVert \alpha_{ij}\, f(x_j) \right\rVert", r"f(x_j) = v_j\, W_O^{(h)}", key="av_formulas_sent")
        show(content, f"value-norms-L{layer}-H{head}")
        show(content, f"value-shares-L{layer}-H{head}")
        st.caption(
            f"“{md(v['top_key'])}” receives {v['top_key_weight']:.0%} of this head's weight and {v['top_key_norm']:.0%} of what it sends; "
            f"its ‖f(x)‖ is {v['f_norm_top']:.2f} against a median of {v['f_norm_median']:.2f} over the keys."
        )

        st.subheader("Rollout: what each token finally draws on")
        st.markdown("Abnar & Zuidema (2020): average the heads of each layer, add the residual path as ½·I, multiply the layers.")
        formulas(r"\hat A_l = \tfrac12\,\overline{A_l} + \tfrac12 I", r"R = \hat A_L \cdots \hat A_1", key="av_formulas_rollout")
        show(content, "rollout")
        show(content, "flow")
        st.caption("Flow reads the same layers as a network of pipes (max-flow to each input token, then normalised to sum 1).")
        show_notices(content, "flow")

        st.subheader("Knock heads out")
        names = [(l, h) for l in range(trace.n_layers) for h in range(trace.n_heads)]
        left, right = st.columns(2)
        chosen = left.multiselect(
            "Heads to knock out (output z set to 0)", names, default=[(layer, head)], format_func=lambda lh: f"{lh[0]}.{lh[1]}", key="w_ablate_heads"
        )
        tokens = [t.text for t in trace.tokens[s.sentence]]
        word = right.selectbox("Token to follow", range(len(tokens)), index=len(tokens) - 1, format_func=lambda i: f"{i}: {tokens[i]}", key="w_ablate_word")
        ablation = ablation_section(s, trace, model, chosen, word)
        show_notices(ablation)
        for figure_id in ("ablation-prediction", "ablation-word"):
            if figure_id in ablation.figures:
                show(ablation, figure_id)
        if "kl_bits" in ablation.values:
            a = ablation.values
            st.caption(f"KL(before ‖ after) = {a['kl_bits']:.3f} bits; top token {md(a['top_before'])} → {md(a['top_after'])}.")
        if st.button("Rank every head by its effect on this sentence", key="w_rank_heads"):
            with st.spinner(f"Knocking out {len(names)} heads one at a time, in batches…"):
                ranking = ranking_section(s, trace, model)
            st.caption(f"Effect: {md(ranking.values['measure'])}.")
            show(ranking, "head-ranking")
            show(ranking, "head-effects")

        st.subheader("Two sentences, head by head")
        st.markdown("The sentence shown and the next one are aligned token by token; for each aligned query, how far its row moves (total variation, 0 … 1).")
        show_notices(content, "diff")
        if "diff-change" in content.figures:
            show(content, "diff-change")
            show_table(content, "diff-top")
            show(content, f"diff-L{layer}-H{head}")
            only_a, only_b = ", ".join(v["unaligned_a"]) or "—", ", ".join(v["unaligned_b"]) or "—"
            st.caption(f"{v['aligned']} tokens aligned; only in the first: {md(only_a)}; only in the second: {md(only_b)}.")


INTRO = (
    "What each head does **on this sentence**, computed now: how spread out its rows are (**entropy**), how far "
    "it looks (**mean distance**), and how much of its weight goes to the previous token, the token itself, the "
    "first token, [SEP]-like tokens and punctuation. The first rule in the table that a head meets gives its badge."
)
page("Heads", (SENTENCE, ATTENTION, FIGURES), body, INTRO)
