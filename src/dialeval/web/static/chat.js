// Live chat pages: send a message, follow the bot's reply as it is produced, retry after a bot
// error, and post the page's forms without reloading. Our own code; no library.
// Every text from the server is inserted with textContent, never innerHTML.
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  function requestId() {
    if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID().replace(/-/g, "");
    return (Date.now().toString(36) + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2));
  }

  function post(url, data) {
    var body = Object.assign({ request_id: requestId() }, data || {});
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrfToken() },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (json) {
        if (!response.ok || json.ok === false) {
          var error = new Error(json.error || ("The server answered " + response.status + "."));
          error.status = response.status;
          error.json = json;
          throw error;
        }
        return json;
      });
    });
  }

  function formData(form) {
    var out = {};
    new FormData(form).forEach(function (value, key) {
      if (key === "csrf") return;
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        if (!Array.isArray(out[key])) out[key] = [out[key]];
        out[key].push(value);
      } else {
        out[key] = value;
      }
    });
    if (!out.quality && form.querySelector("[data-quality]")) out.quality = [];
    return out;
  }

  function showError(form, message) {
    var box = form && (form.querySelector("[data-error]") ||
      (form.nextElementSibling && form.nextElementSibling.matches("[data-error]") ? form.nextElementSibling : null));
    if (!box) box = document.querySelector("#live [data-error]");
    if (box) box.textContent = message || "";
  }

  // Reload only the live part of the page (and the progress bar) from the server: the page is
  // always rebuilt from what is stored, exactly as after a browser refresh.
  function refresh() {
    return fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (response.redirected && response.url.indexOf("/task") === -1) {
          window.location.href = response.url;
          return null;
        }
        return response.text();
      })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        var current = document.getElementById("live");
        if (!fresh || !current) { window.location.reload(); return; }
        current.replaceWith(document.importNode(fresh, true));
        var oldProgress = document.querySelector(".topbar .progress");
        var newProgress = doc.querySelector(".topbar .progress");
        if (oldProgress && newProgress) oldProgress.replaceWith(document.importNode(newProgress, true));
        var meta = doc.querySelector('meta[name="csrf-token"]');
        if (meta) document.querySelector('meta[name="csrf-token"]').setAttribute("content", meta.getAttribute("content"));
        init();
      })
      .catch(function () { window.location.reload(); });
  }

  function scrollTranscript() {
    var t = document.getElementById("transcript");
    if (t) t.scrollTop = t.scrollHeight;
  }

  // -- following a bot reply ---------------------------------------------------------------------
  var following = false;

  function showWaiting(root) {
    var waiting = root.querySelector("#waiting");
    if (waiting) waiting.hidden = false;
    var error = root.querySelector("#bot-error");
    if (error) error.hidden = true;
  }

  function showBotError(root, message) {
    var waiting = root.querySelector("#waiting");
    if (waiting) waiting.hidden = true;
    var box = root.querySelector("#bot-error");
    if (!box) return;
    box.querySelector("[data-error-text]").textContent = message || "unknown error";
    box.hidden = false;
    var button = box.querySelector("[data-retry]");
    if (button) button.disabled = false;
  }

  function appendChunk(root, slot, text) {
    var el = root.querySelector('[data-slot="' + slot + '"]');
    if (!el) return;
    if (el.classList.contains("typing")) {
      el.classList.remove("typing");
      el.textContent = "";
    }
    el.textContent += text;  // text only: a reply holding <script> stays text
    scrollTranscript();
  }

  function follow(root, cursor, generation) {
    following = true;
    post(root.dataset.watchUrl, { cursor: String(cursor || 0), generation: generation || "" }).then(function (res) {
      var events = res.events || [];
      var ended = false;
      for (var i = 0; i < events.length; i++) {
        var ev = events[i];
        if (ev.event === "chunk") appendChunk(root, ev.slot, ev.text);
        else if (ev.event === "error") { showBotError(root, ev.message); ended = true; following = false; }
        else if (ev.event === "done") { ended = true; following = false; refresh(); }
        else if (ev.event === "idle") { ended = true; following = false; askReply(root); }
      }
      if (!ended) {
        if (res.finished) { following = false; refresh(); }
        else follow(root, res.cursor, generation);
      }
    }).catch(function (err) {
      following = false;
      if (err.status === 409 || err.status === 403) { refresh(); return; }
      setTimeout(function () { follow(root, cursor, generation); }, 1500);  // a network hiccup: keep following
    });
  }

  function askReply(root) {
    showWaiting(root);
    post(root.dataset.replyUrl, {}).then(function (res) {
      if (res.finished) refresh();
      else follow(root, 0, res.generation);
    }).catch(function (err) {
      if (err.status === 429) { setTimeout(function () { askReply(root); }, 2500); return; }
      showBotError(root, err.message);
    });
  }

  // -- wiring ------------------------------------------------------------------------------------
  // When the live part was last (re)built: a form's elapsed_ms is the time from then to its submit,
  // the page's own measure of the annotator's time on this step (as the ACUTE pages send).
  var shownAt = Date.now();

  function init() {
    var root = document.getElementById("live");
    if (!root) return;
    shownAt = Date.now();
    scrollTranscript();

    var composer = root.querySelector("form[data-chat-send]");
    if (composer) {
      var textarea = composer.querySelector("textarea");
      textarea.addEventListener("keydown", function (e) {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          composer.requestSubmit ? composer.requestSubmit() : composer.dispatchEvent(new Event("submit"));
        }
      });
      composer.addEventListener("submit", function (e) {
        e.preventDefault();
        var text = textarea.value.trim();
        if (!text) return;
        var button = composer.querySelector("button");
        button.disabled = true;
        textarea.disabled = true;
        var rid = composer.querySelector('input[name="request_id"]').value;
        post(root.dataset.sendUrl, { text: text, request_id: rid }).then(function (res) {
          var list = document.getElementById("transcript");
          if (list) {
            var li = document.createElement("li");
            li.className = "msg human";
            var who = document.createElement("span");
            who.className = "who";
            who.textContent = "You";
            li.appendChild(who);
            li.appendChild(document.createTextNode(text));
            list.appendChild(li);
          }
          composer.hidden = true;
          showError(composer, "");
          showWaiting(root);
          scrollTranscript();
          if (res.finished) refresh();
          else follow(root, 0, res.generation);
        }).catch(function (err) {
          button.disabled = false;
          textarea.disabled = false;
          showError(composer, err.message);
        });
      });
      textarea.focus();
    }

    var retry = root.querySelector("[data-retry]");
    if (retry) {
      retry.addEventListener("click", function () {
        retry.disabled = true;
        askReply(root);
      });
    }

    root.querySelectorAll("form[data-live-form]").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var button = form.querySelector('button[type="submit"]');
        if (button) button.disabled = true;
        var data = formData(form);
        data.elapsed_ms = String(Date.now() - shownAt);
        post(form.getAttribute("action"), data).then(function (res) {
          if (res.done && res.redirect) { window.location.href = res.redirect; return; }
          if (res.redirect && res.redirect.indexOf("/task") === -1) { window.location.href = res.redirect; return; }
          refresh();
        }).catch(function (err) {
          if (button) button.disabled = false;
          showError(form, err.message);
          if (err.status === 409) refresh();
        });
      });
    });

    // "None of these" excludes the qualities, and the other way round.
    var none = root.querySelector("[data-none]");
    if (none) {
      var qualities = root.querySelectorAll("[data-quality]");
      none.addEventListener("change", function () {
        if (none.checked) qualities.forEach(function (q) { q.checked = false; });
      });
      qualities.forEach(function (q) {
        q.addEventListener("change", function () { if (q.checked) none.checked = false; });
      });
    }

    root.querySelectorAll("[data-slider]").forEach(function (slider) {
      slider.addEventListener("input", function () {
        var item = slider.closest(".da-item");
        if (item) item.classList.remove("untouched");
      });
    });

    var errorBox = root.querySelector("#bot-error");
    var errorShown = errorBox && !errorBox.hidden;
    if (root.dataset.stage === "waiting" && !errorShown && !following) askReply(root);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
