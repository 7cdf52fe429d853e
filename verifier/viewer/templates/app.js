(function () {
  "use strict";
  var table = document.getElementById("rollouts");
  if (table) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var count = document.getElementById("shown");
    var filters = Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
    var apply = function () {
      var q = (document.getElementById("q") || {value: ""}).value.toLowerCase();
      var n = 0;
      rows.forEach(function (tr) {
        var ok = filters.every(function (f) { return !f.value || tr.dataset[f.dataset.filter] === f.value; });
        if (ok && q) { ok = tr.textContent.toLowerCase().indexOf(q) >= 0; }
        tr.hidden = !ok;
        if (ok) { n += 1; }
      });
      if (count) { count.textContent = String(n); }
    };
    filters.forEach(function (f) { f.addEventListener("change", apply); });
    var q = document.getElementById("q");
    if (q) { q.addEventListener("input", apply); }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      if (!th.dataset.sort) { return; }
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var num = th.dataset.sort === "num";
        var key = function (tr) {
          var v = tr.cells[col].dataset.v;
          if (v === undefined) { v = tr.cells[col].textContent; }
          if (!num) { return v.toLowerCase(); }
          return v === "" ? -Infinity : parseFloat(v);
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
        });
        rows.forEach(function (tr) { body.appendChild(tr); });
      });
    });
    apply();
  }
  var box = document.getElementById("lightbox");
  if (box) {
    var img = box.querySelector("img"), cap = box.querySelector("figcaption");
    document.addEventListener("click", function (e) {
      var a = e.target.closest ? e.target.closest("a.shot[href]") : null;
      if (a && !e.ctrlKey && !e.metaKey) {
        e.preventDefault();
        img.src = a.getAttribute("href");
        cap.textContent = a.getAttribute("title") || "";
        box.hidden = false;
      } else if (!box.hidden && box.contains(e.target)) {
        box.hidden = true;
      }
    });
    document.addEventListener("keydown", function (e) { if (e.key === "Escape") { box.hidden = true; } });
  }
})();
