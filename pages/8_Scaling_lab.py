import streamlit as st

from ui import FIGURES, download_all, formulas, guarded, key, page, show
from viz.content.scaling import scaling_lab_page

context = page("Scaling lab", (FIGURES,))
st.markdown(
    "What would happen with d_k = 512? Take random query and key vectors whose entries have mean 0 and "
    "variance 1. Their dot product adds up d_k such products, so its **spread grows like √d_k**. Dividing by "
    "√d_k brings it back to 1. Without the division, the scores of a row lie far apart and the softmax "
    "puts almost all the weight on one key."
)
formulas(
    r"\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k",
    r"\Rightarrow\; \operatorname{std}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1",
    key="av_formulas_variance",
)

with guarded():
    st.slider("d_k, the size of one head", 1, 1024, key=key("lab_d_k"))
    model_d_k = context.trace.d_head
    content = scaling_lab_page(context.settings.lab_d_k, model_d_k)
    v = content.values
    show(content, "dot-spread")
    st.caption(
        f"At d_k = {v['d_k']}: the measured spread of q·k is {v['spread']:.2f} (√d_k = {v['root']:.2f}). {context.model.name} has d_k = {model_d_k} (marked)."
    )
    show(content, f"softmax-row-d{v['d_k']}")
    st.caption(
        f"Largest weight of the row: {v['largest_with']:.2f} with the division, {v['largest_without']:.2f} without; "
        f"entropy {v['entropy_with']:.2f} and {v['entropy_without']:.2f} bits (uniform over 8 keys: {v['uniform_entropy']:.0f} bits)."
    )
    st.page_link("pages/3_Attention.py", label="Back to the model's own attention", icon=":material/grid_on:")

download_all("scaling-lab")
