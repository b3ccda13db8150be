// dialeval: our own small helper script. Never puts user or bot text into innerHTML.
(function () {
  "use strict";
  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.getAttribute("content") : "";
  }
  function requestId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID().replace(/-/g, "");
    return String(Date.now()) + Math.random().toString(16).slice(2);
  }
  function post(url, data) {
    data = Object.assign({}, data || {});
    if (!data.request_id) data.request_id = requestId();
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrf() },
      body: JSON.stringify(data)
    }).then(function (r) {
      return r.json().catch(function () { return { ok: false, error: "Unexpected answer from the server (" + r.status + ")." }; })
        .then(function (j) { j.status = r.status; return j; });
    });
  }
  function appendText(parent, tag, className, text) {
    var el = document.createElement(tag || "div");
    if (className) el.className = className;
    el.textContent = text == null ? "" : String(text);
    parent.appendChild(el);
    return el;
  }
  function showError(form, message) {
    var box = form.querySelector("[data-error]");
    if (box) { box.textContent = message || ""; if (message) box.scrollIntoView({ block: "nearest" }); }
  }
  function submitAjax(form, ev) {
    ev.preventDefault();
    if (form.dataset.busy === "1") return;  // a double click sends once; the server would ignore a repeat anyway
    form.dataset.busy = "1";
    var buttons = form.querySelectorAll("button[type=submit]");
    buttons.forEach(function (b) { b.disabled = true; });
    showError(form, "");
    var body = new FormData(form);
    fetch(form.action, {
      method: "POST", credentials: "same-origin", body: body,
      headers: { "Accept": "application/json", "X-CSRF-Token": csrf() }
    }).then(function (r) {
      return r.json().catch(function () { return { ok: false, error: "Unexpected answer from the server (" + r.status + ")." }; })
        .then(function (j) { j.status = r.status; j.retryAfter = Number(r.headers.get("Retry-After")) || 2; return j; });
    }).then(function (j) {
      if (j.ok) { window.location.assign(j.redirect || window.location.href); return; }
      if (j.status === 409) { window.location.reload(); return; }
      if (j.status === 503) {  // busy: the same answer (same request id) is sent again, never twice stored
        showError(form, "The study is busy; your answer is sent again in " + j.retryAfter + " s.");
        setTimeout(function () { form.dataset.busy = "0"; form.requestSubmit ? form.requestSubmit() : submitAjax(form, { preventDefault: function () {} }); }, 1000 * j.retryAfter);
        return;
      }
      showError(form, j.error || "Something went wrong.");
      form.dataset.busy = "0";
      buttons.forEach(function (b) { b.disabled = false; });
    }).catch(function () {
      showError(form, "The network failed; your answer was not sent. Please try again.");
      form.dataset.busy = "0";
      buttons.forEach(function (b) { b.disabled = false; });
    });
  }
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form && form.hasAttribute("data-ajax")) submitAjax(form, ev);
  });
  document.addEventListener("DOMContentLoaded", function () {
    var auto = document.querySelector("form[data-autosubmit]");
    if (auto) setTimeout(function () { auto.submit(); }, 1500);
    var started = document.querySelector("input[name=elapsed_ms]");
    if (started) {
      var t0 = Date.now();
      document.addEventListener("submit", function () {
        document.querySelectorAll("input[name=elapsed_ms]").forEach(function (i) { i.value = String(Date.now() - t0); });
      }, true);
    }
  });
  window.dialeval = { post: post, appendText: appendText, csrf: csrf, requestId: requestId };
})();
