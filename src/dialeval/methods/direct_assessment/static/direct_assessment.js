// Direct Assessment's page script (methods/direct_assessment/templates/direct_assessment.html):
// the seven rating sliders. The shared live-chat script (static/chat.js) announces each (re)load of
// the live root with the event "dialeval:live-ready"; this script wires that root's sliders and
// brings the rating form on screen (chat.js's showQuestion: the rule every task page follows).
(function () {
  "use strict";
  function helpers() { return window.dialeval || {}; }

  function wireSliders(root) {
    // A slider counts only once it was moved: its value goes into the hidden field then (the
    // server refuses an empty one), so an untouched slider can never pass for a rating of 50.
    root.querySelectorAll("[data-slider]").forEach(function (slider) {
      var key = slider.getAttribute("data-slider");
      var hidden = root.querySelector('[data-slider-value="' + key + '"]');
      var item = slider.closest(".da-item");
      var label = item && item.querySelector("[data-slider-state]");
      function mark() {
        if (item) item.classList.remove("untouched");
        if (label) label.textContent = "answered";
        slider.setAttribute("aria-valuetext", slider.value + " of 100");
      }
      if (hidden && hidden.value !== "") { slider.value = hidden.value; mark(); }
      function moved() {
        if (hidden) hidden.value = slider.value;
        mark();
      }
      slider.addEventListener("input", moved);
      slider.addEventListener("change", moved);
      // A finger that lands on a slider jumps its thumb at once; when the gesture then turns out to
      // be a vertical scroll (touch-action: pan-y makes the browser cancel the pointer), undo that.
      var before = null;
      slider.addEventListener("pointerdown", function (e) {
        if (e.pointerType !== "touch") return;
        before = { value: slider.value, hidden: hidden ? hidden.value : "", untouched: item && item.classList.contains("untouched"),
                   label: label ? label.textContent : "" };
      });
      slider.addEventListener("pointercancel", function () {
        if (!before) return;
        slider.value = before.value;
        if (hidden) hidden.value = before.hidden;
        if (item && before.untouched) {
          item.classList.add("untouched");
          slider.setAttribute("aria-valuetext", "not moved yet");
        }
        if (label) label.textContent = before.label;
        before = null;
        var form = slider.form;
        if (form && helpers().saveDraft) helpers().saveDraft(form);
      });
      slider.addEventListener("pointerup", function () { before = null; });
    });
  }

  document.addEventListener("dialeval:live-ready", function (e) {
    var root = e.detail.root;
    wireSliders(root);
    var form = root.querySelector("#da-rate-form");
    if (form && helpers().showQuestion) helpers().showQuestion(form);
  });
})();
