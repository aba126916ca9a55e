// aci inspect: sorting and filtering of the run table, j/k between turns, n/p between
// instances, long texts opened in full, and live reload while a run writes its files. Reads
// the page; never writes markup from data (textContent and attributes only).
(function () {
  "use strict";
  var data = {};
  var dataElement = document.getElementById("page-data");
  if (dataElement) {
    try { data = JSON.parse(dataElement.textContent); } catch (e) { data = {}; }
  }

  // ---- live: poll the page's version, reload (keeping the scroll position) when it changes
  var scrollKey = "aci-inspect-scroll:" + location.pathname;
  if (data.live && location.protocol.indexOf("http") === 0) {
    var saved = sessionStorage.getItem(scrollKey);
    if (saved !== null) {
      sessionStorage.removeItem(scrollKey);
      window.scrollTo(0, Number(saved));
    }
    var polling = false;
    setInterval(function () {
      if (polling) { return; }
      polling = true;
      fetch(data.live, { cache: "no-store" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (version) {
          polling = false;
          if (version !== null && version !== data.version) {
            sessionStorage.setItem(scrollKey, String(window.scrollY));
            location.reload();
          }
        })
        .catch(function () { polling = false; });
    }, 2000);
  }

  // ---- the run table: click a header to sort, type to filter (`word`, or `column:value`)
  var table = document.getElementById("runs");
  if (table) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var columns = headers.map(function (th) { return th.getAttribute("data-col"); });
    var shown = document.getElementById("shown");
    var cellValue = function (row, index) {
      var cell = row.cells[index];
      var v = cell.getAttribute("data-v");
      return v !== null ? Number(v) : cell.textContent.toLowerCase();
    };
    headers.forEach(function (th, index) {
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var sorted = rows.slice().sort(function (a, b) {
          var x = cellValue(a, index), y = cellValue(b, index);
          var order = x < y ? -1 : x > y ? 1 : 0;
          return ascending ? order : -order;
        });
        var fragment = document.createDocumentFragment();
        sorted.forEach(function (row) { fragment.appendChild(row); });
        body.appendChild(fragment);
      });
    });
    var filter = document.getElementById("filter");
    var applyFilter = function () {
      var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      var count = 0;
      rows.forEach(function (row) {
        var text = null;
        var match = terms.every(function (term) {
          var colon = term.indexOf(":");
          if (colon > 0) {
            var index = columns.indexOf(term.slice(0, colon));
            if (index >= 0) {
              var cell = row.cells[index].textContent.toLowerCase().replace(/\s+/g, "");
              return cell.indexOf(term.slice(colon + 1)) >= 0;
            }
          }
          if (text === null) { text = row.textContent.toLowerCase(); }
          return text.indexOf(term) >= 0;
        });
        row.hidden = !match;
        if (match) { count += 1; }
      });
      if (shown) { shown.textContent = String(count); }
    };
    if (filter) {
      var query = new URLSearchParams(location.search).get("q");
      if (query) { filter.value = query; }
      filter.addEventListener("input", applyFilter);
      applyFilter();
    }
  }

  // ---- a long text shows its ends; on a served page its link opens the full text in place
  // (as text, never as markup), from a file (file://) it opens the text's own file
  document.addEventListener("click", function (event) {
    var link = event.target && event.target.closest ? event.target.closest("a.full-text") : null;
    if (!link || location.protocol.indexOf("http") !== 0) { return; }
    var block = link.closest(".folded");
    if (!block || Number(link.getAttribute("data-bytes")) > 4000000) { return; }
    event.preventDefault();
    fetch(link.getAttribute("href"), { cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null) { location.href = link.href; return; }
        var pre = block.querySelector("pre").cloneNode(false);
        pre.textContent = text;
        block.parentNode.replaceChild(pre, block);
      })
      .catch(function () { location.href = link.href; });
  });

  // ---- keys: j/k move between turns, n/p open the next/previous instance
  var turns = Array.prototype.slice.call(document.querySelectorAll(".turn"));
  var current = -1;
  var select = function (index) {
    if (turns.length === 0) { return; }
    index = Math.max(0, Math.min(turns.length - 1, index));
    if (current >= 0) { turns[current].classList.remove("current"); }
    current = index;
    var turn = turns[current];
    turn.classList.add("current");
    turn.scrollIntoView({ block: "start" });
    if (history.replaceState) { history.replaceState(null, "", "#" + turn.id); }
  };
  if (location.hash.length > 1) {
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var found = turns.indexOf(target);
    if (found >= 0) { select(found); }
  }
  var follow = function (id) {
    var link = document.getElementById(id);
    if (link && link.getAttribute("href")) { location.href = link.getAttribute("href"); }
  };
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
    if (event.key === "j") { select(current + 1); }
    else if (event.key === "k") { select(current < 0 ? 0 : current - 1); }
    else if (event.key === "n") { follow("next-instance"); }
    else if (event.key === "p") { follow("prev-instance"); }
    else { return; }
    event.preventDefault();
  });
})();
