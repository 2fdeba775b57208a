import streamlit as st

from ui import ATTENTION, FIGURES, guarded, page, show, show_notices, show_table
from ui.corpus import compared, corpus, corpus_content, corpus_controls, downloads, examples_table, open_clicked_example, open_example, page_buttons, summary
from viz.content.corpus import head_name


def body(context):
    open_example()
    other = compared(context)
    corpus_controls(context)
    with guarded():
        chosen = corpus(context.settings)
        if chosen is None:
            return
        sentences, notices, digest = chosen
        result = summary(context, sentences, digest)
        if result is None:
            return
        settings = context.settings
        layer, head = settings.layer, settings.heads[0]
        content = corpus_content(settings, result, other, sentences)
        for notice in notices:
            st.info(notice, icon="ℹ️")
        if not settings.display.is_models_own:
            st.caption("The corpus is read by the model as trained: the sidebar's mask, scaling, temperature and knocked-out heads do not apply here.")
        show_notices(content, "corpus-notice")
        st.markdown(
            f"### The strongest weights of {head_name(layer, head)}\n\nEach bar is one weight, strongest first, in its sentence: "
            "the query in [brackets] gives it to the coloured key. **Click a bar** to open its sentence on the Attention page, "
            "with this head and that query pinned."
        )
        page_buttons(content.values["examples_page"], content.values["examples_pages"], content.values["examples"])
        show(content, "top-examples", on_click=open_clicked_example(settings, sentences, layer, head))
        show_notices(content, "examples-")
        with st.expander("The examples as a table, each with a link to the Attention page"):
            examples_table(content)
        st.markdown(
            "### Where its weight goes, sentence after sentence\n\nIts mean weight by offset and by kind of key, with the spread "
            "over the sentences, and how often it gets each badge."
        )
        show(content, "by-offset")
        show_notices(content, "offset-")
        show(content, "shares")
        show_notices(content, "shares-")
        show(content, "badge-shares")
        show_notices(content, "badges-")
        show_notices(content, "entropy-")
        with st.expander("Its numbers as a table, and the badges' rules"):
            show_table(content, "head-statistics")
            show_table(content, "badge-rules")
        if other is not None:
            st.markdown(f"### {head_name(layer, head).capitalize()} beside {head_name(*other)}\n\nThe same measures for the two heads, side by side.")
            show_notices(content, "compare-")
            show(content, "compare-offset")
            show(content, "compare-shares")
            show(content, "compare-badges")
            with st.expander("The two heads' numbers as a table"):
                show_table(content, "compare")
        st.markdown("### Every head at once\n\nEach square is one head over the same sentences: its most common badge, then the chosen number.")
        show(content, "grid-badges")
        show_notices(content, "grid-")
        show(content, f"grid-{settings.corpus_statistic}")
        with st.expander("Every head's numbers as a table (click a column to sort)"):
            show_table(content, "grid")
        downloads(result)


INTRO = (
    "A badge on the Heads page describes a head on **one** sentence. Here the same head reads hundreds: its strongest "
    "query → key weights, where its weight goes on average and how much that varies from sentence to sentence, and how "
    "often it earns each badge. Choose the head with the sidebar's layer and first head."
)
page("Heads across a corpus", (ATTENTION, FIGURES), body, INTRO)
