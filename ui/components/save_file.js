// Shared by the chart (ui/chart.py) and the head view (ui/head_view.py): appended to each one's module.

function saveFile(blob, name) {
  // a file from bytes in the page: an <a download> on a blob URL, clicked
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.style.display = "none";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
