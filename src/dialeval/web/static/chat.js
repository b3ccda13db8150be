// Live chat pages: send a message, follow the bot's reply token by token as it is produced
// (Server-Sent Events from /events; long-polling `watch` when EventSource fails), retry after a bot
// error or a network failure, and post the page's forms without reloading. Our own code; no library.
// Annotator text is inserted with textContent; bot replies through dialeval.showBotChunk (app.js),
// which shows the server's sanitised Markdown (the events' `html`) and the text after it.
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

  var NETWORK_MESSAGE = "We could not reach the server (is the connection down?). Nothing you typed is lost.";
  function helpers() { return window.dialeval || {}; }

  // On a laptop the question and its answers open on screen: the form's end at the bottom, or,
  // when the form is taller than the window, its top just under the sticky header. A method's own
  // script calls it for its own form (window.dialeval.showQuestion; Direct Assessment's ratings).
  function showQuestion(form) {
    if (form && window.innerWidth > 700) {
      form.scrollIntoView({ block: form.offsetHeight > window.innerHeight * 0.75 ? "start" : "end" });
    }
  }
  if (window.dialeval) window.dialeval.showQuestion = showQuestion;

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
    }, function () {
      var error = new Error(NETWORK_MESSAGE);  // fetch's own "Failed to fetch" says nothing to an annotator
      error.network = true;
      throw error;
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
    // a group of checkboxes marked data-list is sent as an empty list when none is ticked
    form.querySelectorAll("input[data-list]").forEach(function (input) {
      if (!Object.prototype.hasOwnProperty.call(out, input.name)) out[input.name] = [];
    });
    return out;
  }

  function showError(form, message, retry) {
    if (form && helpers().showError && (form.querySelector("[data-error]") ||
        (form.nextElementSibling && form.nextElementSibling.matches("[data-error]")))) {
      helpers().showError(form, message, retry);
      return;
    }
    var box = document.querySelector("#live [data-error]");
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
        [".topbar .progress", ".topbar .persona-quick"].forEach(function (sel) {
          var old = document.querySelector(sel), fresh2 = doc.querySelector(sel);
          if (old && fresh2) old.replaceWith(document.importNode(fresh2, true));
        });
        var meta = doc.querySelector('meta[name="csrf-token"]');
        if (meta) document.querySelector('meta[name="csrf-token"]').setAttribute("content", meta.getAttribute("content"));
        init();
      })
      .catch(function () {
        var box = document.querySelector("#live [data-error]");
        if (box) {
          box.textContent = NETWORK_MESSAGE + " ";
          var b = document.createElement("button");
          b.type = "button"; b.className = "secondary small retry"; b.textContent = "Try again";
          b.addEventListener("click", function () { refresh(); });
          box.appendChild(b);
        }
      });
  }

  // The transcript opens at its end, or, when the replies to the annotator's last message are
  // taller than the box (long answers), at that message: one reads the answers from their start.
  // A transcript that is no box (the arena's vote on a phone) scrolls the page there instead.
  function scrollTranscript(opening) {
    var t = document.getElementById("transcript");
    if (!t) return;
    var mine = t.querySelectorAll(".msg.human"), last = mine[mine.length - 1];
    var end = t.scrollHeight - t.clientHeight;
    if (!last) { t.scrollTop = end; return; }
    if (getComputedStyle(t).maxHeight === "none") {
      if (opening && mine.length > 1) last.scrollIntoView({ block: "start" });
      return;
    }
    var top = last.getBoundingClientRect().top - t.getBoundingClientRect().top + t.scrollTop - 8;
    t.scrollTop = Math.min(end, Math.max(0, top));
  }

  // -- following a bot reply ---------------------------------------------------------------------
  var following = false;

  function showWaiting(root) {
    var waiting = root.querySelector("#waiting");
    if (waiting) {
      // a retry starts every reply afresh: what a failed round had streamed is not kept (nor votable)
      waiting.querySelectorAll("[data-slot]").forEach(function (el) {
        if (el.classList.contains("typing")) return;
        el.classList.add("typing");
        el.textContent = "";
        var dots = document.createElement("span");
        dots.className = "dots";
        dots.textContent = el.getAttribute("data-typing") || "Your partner is typing";
        el.appendChild(dots);
      });
      waiting.hidden = false;
    }
    var error = root.querySelector("#bot-error");
    if (error) error.hidden = true;
  }

  function showBotError(root, message) {
    var waiting = root.querySelector("#waiting");
    if (waiting) waiting.hidden = true;
    var box = root.querySelector("#bot-error");
    if (!box) return;
    // the server's neutral notice ("Model B could not answer; try again"), or a network message
    box.querySelector("[data-error-text]").textContent = message || "Your partner could not answer; try again.";
    box.hidden = false;
    var button = box.querySelector("[data-retry]");
    if (button) button.disabled = false;
  }

  function appendChunk(root, slot, ev) {
    var el = root.querySelector('[data-slot="' + slot + '"]');
    if (!el) return;
    helpers().showBotChunk(el, ev);
    if (!window.dialevalFirstChunkAt) window.dialevalFirstChunkAt = Date.now();  // read by the browser tests
    scrollTranscript();
  }

  function handleEvent(root, ev) {
    if (ev.event === "chunk") { appendChunk(root, ev.slot, ev); return false; }
    if (ev.event === "error") { showBotError(root, ev.message); return true; }
    if (ev.event === "done") { refresh(); return true; }
    if (ev.event === "idle") { askReply(root); return true; }
    return false;
  }

  // Server-Sent Events: each chunk arrives as soon as the bot wrote it. On a broken stream fall
  // back to long-polling from the last event received (nothing is shown twice).
  function stream(root, generation) {
    if (!window.EventSource || !root.dataset.eventsUrl) { follow(root, 0, generation); return; }
    following = true;
    var received = 0;
    var base = root.dataset.eventsUrl;
    // the URL may already carry ?sid= (a cookie-less iframe): add the rest with & then
    var url = base + (base.indexOf("?") >= 0 ? "&" : "?") + "generation=" + encodeURIComponent(generation || "") + "&cursor=0";
    var source = new EventSource(url, { withCredentials: true });
    source.onmessage = function (e) {
      received += 1;
      var ev;
      try { ev = JSON.parse(e.data); } catch (err) { return; }
      if (handleEvent(root, ev)) { source.close(); following = false; }
    };
    source.onerror = function () {
      source.close();
      if (following) follow(root, received, generation);
    };
  }

  function follow(root, cursor, generation) {
    following = true;
    post(root.dataset.watchUrl, { cursor: String(cursor || 0), generation: generation || "" }).then(function (res) {
      showError(null, "");
      var events = res.events || [];
      var ended = false;
      for (var i = 0; i < events.length && !ended; i++) {
        if (handleEvent(root, events[i])) { ended = true; following = false; }
      }
      if (!ended) {
        if (res.finished) { following = false; refresh(); }
        else follow(root, res.cursor, generation);
      }
    }).catch(function (err) {
      following = false;
      if (err.status === 409 || err.status === 403) { refresh(); return; }
      // a network hiccup: say so, and keep following (the reply is being written on the server anyway)
      if (err.network) showError(null, "The connection was lost; reconnecting… Your conversation is kept.");
      setTimeout(function () { follow(root, cursor, generation); }, 1500);
    });
  }

  function askReply(root) {
    showWaiting(root);
    post(root.dataset.replyUrl, {}).then(function (res) {
      if (res.finished) refresh();
      else stream(root, res.generation);
    }).catch(function (err) {
      if (err.status === 429 || err.status === 503) { setTimeout(function () { askReply(root); }, 2500); return; }
      showBotError(root, err.network ? NETWORK_MESSAGE : err.message);
    });
  }

  // After a step that replaces the whole task (the practice checked): its feedback, else its start,
  // just under the sticky header, wherever the annotator had scrolled to on the longer page before.
  function showTopOfTask() {
    var target = document.querySelector("#live .notice[role=status]") || document.querySelector("#live .live-main");
    if (!target) return;
    var bar = document.querySelector(".topbar");
    var offset = (bar ? bar.getBoundingClientRect().height : 0) + 8;
    window.scrollTo(0, Math.max(0, target.getBoundingClientRect().top + window.pageYOffset - offset));
  }

  // A method's own script follows the page through these events on document (detail: root, form,
  // response or error). Returns false when a listener called preventDefault(): it handled the step.
  function announce(name, detail) {
    return document.dispatchEvent(new CustomEvent(name, { cancelable: true, detail: detail }));
  }

  // -- wiring ------------------------------------------------------------------------------------
  // When the live part was last (re)built: a form's elapsed_ms is the time from then to its submit,
  // the page's own measure of the annotator's time on this step (as the ACUTE pages send).
  var shownAt = Date.now();

  function init() {
    var root = document.getElementById("live");
    if (!root) return;
    shownAt = Date.now();
    if (helpers().initDrafts) helpers().initDrafts(root);
    scrollTranscript(true);

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
        // how the message was entered (counts only; app.js): taken once, sent again on a retry
        var signals = helpers().takeSignals ? helpers().takeSignals(composer) : null;
        var send = function () {
        post(root.dataset.sendUrl, { text: text, request_id: rid, input_signals: signals }).then(function (res) {
          if (helpers().clearDraft) helpers().clearDraft(composer);
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
          announce("dialeval:message-sent", { root: root });  // e.g. the arena: the held vote is final now
          composer.hidden = true;
          showError(composer, "");
          showWaiting(root);
          scrollTranscript();
          if (res.finished) refresh();
          else stream(root, res.generation);
        }).catch(function (err) {
          if (err.status === 503) {  // the server is busy: send the same message again by itself
            showError(composer, "The study is busy; your message is sent again in a moment.");
            setTimeout(send, 2000);
            return;
          }
          button.disabled = false;
          textarea.disabled = false;
          // same request_id on a retry: a message that did arrive is never stored twice
          showError(composer, err.message, err.network || err.status >= 500 ? function () {
            button.disabled = true; textarea.disabled = true; send();
          } : null);
        });
        };
        send();
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
        // one request in flight per form: a click and the page's own submit (a method's script may
        // submit a form by itself) at the same moment must not send twice
        if (form.getAttribute("data-sending") === "1") return;
        form.setAttribute("data-sending", "1");
        var button = form.querySelector('button[type="submit"]');
        if (button) button.disabled = true;
        var data = formData(form);
        data.elapsed_ms = String(Date.now() - shownAt);
        var send = function () {
        post(form.getAttribute("action"), data).then(function (res) {
          form.removeAttribute("data-sending");
          if (helpers().clearDraft) helpers().clearDraft(form);
          // a method's script may take the answer over (the arena shows who the models were)
          if (!announce("dialeval:form-done", { root: root, form: form, response: res })) return;
          if (res.done && res.redirect) { window.location.replace(res.redirect); return; }
          if (res.redirect && res.redirect.indexOf("/task") === -1) { window.location.replace(res.redirect); return; }
          var showTop = form.hasAttribute("data-show-top");
          refresh().then(function () { if (showTop) showTopOfTask(); });
        }).catch(function (err) {
          form.removeAttribute("data-sending");
          // a method's script may take a refusal over (the arena: a vote change after its window)
          if (!announce("dialeval:form-failed", { root: root, form: form, error: err })) return;
          if (err.status === 503) {  // busy: the same answer again by itself (same request id)
            showError(form, "The study is busy; your answer is sent again in a moment.");
            form.setAttribute("data-sending", "1");  // still in flight: it goes again by itself
            setTimeout(send, 2000);
            return;
          }
          if (button) button.disabled = false;
          showError(form, err.message, err.network || err.status >= 500 ? function () {
            if (button) button.disabled = true; send();
          } : null);
          if (err.status === 409) refresh();
        });
        };
        send();
      });
    });

    // A method's own script (methods/<id>/static/) sets up its part of the page on this event,
    // after every load and every refresh of the live root (Direct Assessment: its sliders and its form).
    announce("dialeval:live-ready", { root: root });

    var errorBox = root.querySelector("#bot-error");
    var errorShown = errorBox && !errorBox.hidden;
    if (root.dataset.stage === "waiting" && !errorShown && !following) askReply(root);
    showQuestion(root.querySelector("form[data-question]"));  // the step's question, marked by its template
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
