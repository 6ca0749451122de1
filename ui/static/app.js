// heed ui: live updates of the overview and "select all" on a group's
// page. The pages work without it.
"use strict";
(function () {
  var main = document.getElementById("main");
  var live = document.body.getAttribute("data-live");
  if (main && live) {
    var every = Math.max(2, parseInt(live, 10) || 5) * 1000;
    var busy = false;
    var tick = function () {
      if (busy || document.visibilityState === "hidden") return;
      busy = true;
      fetch(location.href, { headers: { "X-Heed-Partial": "1" }, credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) { main.innerHTML = html; document.body.removeAttribute("data-stale"); })
        .catch(function () { document.body.setAttribute("data-stale", "1"); })
        .then(function () { busy = false; });
    };
    setInterval(tick, every);
    document.addEventListener("visibilitychange", tick);
  }
  var all = document.querySelector("[data-select-all]");
  if (all) {
    all.closest("label").hidden = false;
    all.addEventListener("change", function () {
      document.querySelectorAll('input[type=checkbox][name=id]').forEach(function (c) { c.checked = all.checked; });
    });
  }
})();
