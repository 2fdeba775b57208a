"""Figures to files: PNG and SVG (``image``), standalone HTML (``standalone``), CSV (``tables``),
safe file names (``names``), and every figure of a view at once as a zip or a folder (``bundle``).

``python -m viz.export`` is the command line (``viz/cli.py``). Nothing here imports streamlit; the
app passes the bytes to its download buttons.
"""

from .bundle import FORMATS, figures_zip, write_folder
from .image import NO_CHROMIUM_MESSAGE, figure_to_png, figure_to_svg, static_export_available
from .names import safe_filename
from .standalone import figure_to_html, plotly_config
from .tables import figure_to_csv, frame_to_csv, table_to_csv

__all__ = [
    "FORMATS",
    "NO_CHROMIUM_MESSAGE",
    "figure_to_csv",
    "figure_to_html",
    "figure_to_png",
    "figure_to_svg",
    "frame_to_csv",
    "figures_zip",
    "plotly_config",
    "safe_filename",
    "static_export_available",
    "table_to_csv",
    "write_folder",
]
