// SM-Turn's page script (methods/single_model/templates/single_model.html), loaded before the shared
// live-chat script (static/chat.js), which announces each (re)load of the live root with the event
// "dialeval:live-ready": "None of these" excludes the qualities, and the other way round.
(function () {
  "use strict";
  document.addEventListener("dialeval:live-ready", function (e) {
    var root = e.detail.root;
    var none = root.querySelector("[data-none]");
    if (!none) return;
    var qualities = root.querySelectorAll("[data-quality]");
    none.addEventListener("change", function () {
      if (none.checked) qualities.forEach(function (q) { q.checked = false; });
    });
    qualities.forEach(function (q) {
      q.addEventListener("change", function () { if (q.checked) none.checked = false; });
    });
  });
})();
