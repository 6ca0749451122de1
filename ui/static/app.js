// heed ui: live updates of every page that reads (the main part is
// fetched again and swapped in, keeping the URL, its filter and the
// scroll position; not while the reader is selecting or typing), and
// "select all" on lists with checkboxes. The pages work without it.
"use strict";
(function () {
  var main = document.getElementById("main");
  var live = document.body.getAttribute("data-live");
  // The message of an action ("Requeued 5 jobs.") is shown once: the
  // URL the live updates fetch leaves it out.
  var url = new URL(location.href);
  if (url.searchParams.has("done")) {
    url.searchParams.delete("done");
    url.searchParams.delete("n");
    if (!/\/jobs$/.test(url.pathname)) url.searchParams.delete("queue"); // the paused queue's name, not a filter
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  // busyReader: the reader has ticked a box or is in a form field; a
  // swap would lose it.
  var busyReader = function () {
    var a = document.activeElement;
    if (a && main.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) return true;
    return main.querySelector("input[type=checkbox]:checked") !== null;
  };
  var wire = function () {
    var all = main.querySelector("[data-select-all]");
    if (all) {
      all.closest("label").hidden = false;
      all.addEventListener("change", function () {
        main.querySelectorAll("input[type=checkbox][name=id]").forEach(function (c) { c.checked = all.checked; });
      });
    }
  };
  if (main && live) {
    var every = Math.max(2, parseInt(live, 10) || 5) * 1000;
    var busy = false;
    var tick = function () {
      if (busy || document.visibilityState === "hidden" || busyReader()) return;
      busy = true;
      fetch(location.href, { headers: { "X-Heed-Partial": "1" }, credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          if (busyReader()) return;
          var x = window.scrollX, y = window.scrollY;
          main.innerHTML = html;
          wire();
          window.scrollTo(x, y);
          document.body.removeAttribute("data-stale");
        })
        .catch(function () { document.body.setAttribute("data-stale", "1"); })
        .then(function () { busy = false; });
    };
    setInterval(tick, every);
    document.addEventListener("visibilitychange", tick);
  }
  if (main) wire();
})();
