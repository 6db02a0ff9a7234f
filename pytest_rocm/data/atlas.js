// the atlas' search: rows from search.js, results built with textContent (no HTML from data)
function atlasSearch(box, list) {
  var rows = window.ATLAS_ROWS || [];
  function show() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    list.textContent = "";
    if (!words.length) return;
    for (var i = 0; i < rows.length && shown < 200; i++) {
      var r = rows[i], text = (r[0] + " " + r[1] + " " + r[3] + " " + r[4]).toLowerCase();
      if (words.every(function (w) { return text.indexOf(w) >= 0; })) {
        var li = document.createElement("li"), a = document.createElement("a");
        a.href = r[2]; a.textContent = r[0]; li.appendChild(a);
        li.appendChild(document.createTextNode(" (" + r[1] + ") " + r[3]));
        list.appendChild(li); shown++;
      }
    }
    document.getElementById("hits").textContent = shown ? shown + (shown === 200 ? "+" : "") + " rows" : "no row matches";
  }
  box.addEventListener("input", show);
  var q = new URLSearchParams(location.search).get("q");
  if (q) { box.value = q; show(); }
}
// a page's filter: hide the table rows whose text lacks every word typed
function atlasFilter(box, table) {
  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    var rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].textContent.toLowerCase(), hit = words.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].style.display = hit ? "" : "none"; if (hit) shown++;
    }
    document.getElementById("shown").textContent = shown + " of " + rows.length + " rows";
  });
  var q = new URLSearchParams(location.search).get("q");
  if (q) { box.value = q; box.dispatchEvent(new Event("input")); }
}
