// dialeval: our own small helper script (no library). Never puts user or bot text into innerHTML;
// the one innerHTML is showBotChunk's, with HTML the server sanitised (bot_markdown.py); swapInPage
// moves in nodes of the server's own page (DOMParser: none of its scripts run).
// What it adds to every page: forms sent with fetch, drafts kept until the server accepted them,
// the next page swapped in from the reply of an answer or of a session page's form, a warning
// when the same task is open in two tabs, plain network messages with a retry, keyboard shortcuts
// for choices, the "How to" dialog and the conversation tabs on phones.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  var NETWORK_MESSAGE = "We could not reach the server (is the connection down?). Nothing you entered is lost.";

  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.getAttribute("content") : "";
  }
  // A browser that keeps no cookie in a cross-site iframe is identified by the page's token.
  function session() {
    var m = document.querySelector('meta[name="dialeval-session"]');
    return m ? m.getAttribute("content") : "";
  }
  function headers(extra) {
    var h = Object.assign({ "Accept": "application/json", "X-CSRF-Token": csrf() }, extra || {});
    if (session()) h["X-Dialeval-Session"] = session();
    if (window.self !== window.top) h["X-Dialeval-Framed"] = "1";  // auth.FRAMED_HEADER
    return h;
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
      headers: headers({ "Content-Type": "application/json" }),
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

  // -- drafts: what is typed or ticked stays in localStorage until the server accepted it ------------
  var DRAFT_PREFIX = "dialeval:draft:";
  function draftKey(form) {
    var key = form.getAttribute("data-draft");
    return key ? DRAFT_PREFIX + window.location.pathname + ":" + key : null;
  }
  function storage() {
    try { return window.localStorage; } catch (e) { return null; }
  }
  function draftFields(form) {
    return Array.prototype.filter.call(form.elements, function (el) {
      if (!el.name && !el.hasAttribute("data-slider")) return false;
      if (el.type === "hidden") return el.hasAttribute("data-slider-value");
      return el.type !== "submit" && el.type !== "button";
    });
  }
  function fieldId(el) { return el.name || ("slider:" + el.getAttribute("data-slider")); }
  function saveDraft(form) {
    var key = draftKey(form), store = storage();
    if (!key || !store) return;
    var values = {};
    draftFields(form).forEach(function (el) {
      var id = fieldId(el);
      if (el.type === "radio" || el.type === "checkbox") {
        if (!values[id]) values[id] = [];
        if (el.checked) values[id].push(el.value);
      } else {
        values[id] = el.value;
      }
    });
    try { store.setItem(key, JSON.stringify({ at: Date.now(), values: values })); } catch (e) { /* full: ignore */ }
  }
  function restoreDraft(form) {
    var key = draftKey(form), store = storage();
    if (!key || !store) return false;
    var raw = store.getItem(key);
    if (!raw) return false;
    var values;
    try { values = JSON.parse(raw).values || {}; } catch (e) { return false; }
    draftFields(form).forEach(function (el) {
      var id = fieldId(el);
      if (!Object.prototype.hasOwnProperty.call(values, id)) return;
      var v = values[id];
      if (el.type === "radio" || el.type === "checkbox") el.checked = Array.isArray(v) && v.indexOf(el.value) !== -1;
      else if (typeof v === "string") el.value = v;
    });
    form.dispatchEvent(new CustomEvent("dialeval:restored", { bubbles: true }));
    return true;
  }
  function clearDraft(form) {
    var key = draftKey(form), store = storage();
    if (key && store) store.removeItem(key);
  }
  function initDrafts(root) {
    (root || document).querySelectorAll("form[data-draft]").forEach(function (form) {
      if (form.dataset.draftReady === "1") return;
      form.dataset.draftReady = "1";
      restoreDraft(form);
      form.addEventListener("input", function () { saveDraft(form); });
      form.addEventListener("change", function () { saveDraft(form); });
    });
  }

  // -- messages ----------------------------------------------------------------------------------
  function errorBox(form) {
    return form.querySelector("[data-error]") ||
      (form.nextElementSibling && form.nextElementSibling.matches("[data-error]") ? form.nextElementSibling : null);
  }
  // Show a message under a form; with `retry`, a "Try again" button that calls it.
  function showError(form, message, retry) {
    var box = errorBox(form);
    if (!box) return;
    box.textContent = message || "";
    if (message && retry) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "secondary small retry";
      button.textContent = "Try again";
      button.addEventListener("click", function () { box.textContent = ""; retry(); });
      box.appendChild(button);
    }
    if (message) box.scrollIntoView({ block: "nearest" });
  }

  function submitAjax(form, ev) {
    ev.preventDefault();
    if (form.dataset.busy === "1") return;  // a double click sends once; the server would ignore a repeat anyway
    form.dataset.busy = "1";
    var buttons = form.querySelectorAll("button[type=submit]");
    buttons.forEach(function (b) { b.disabled = true; });
    showError(form, "");
    function release() { form.dataset.busy = "0"; buttons.forEach(function (b) { b.disabled = false; }); }
    var body = new FormData(form);
    // a page that can take the next page in the form's reply asks for it (swapInPage)
    var inline = document.body.getAttribute("data-next-page") === "inline";
    fetch(form.action, {
      method: "POST", credentials: "same-origin", body: body,
      headers: headers(inline ? { "X-Dialeval-Next-Page": "inline" } : null)
    }).then(function (r) {
      return r.json().catch(function () { return { ok: false, error: "The server had a problem (" + r.status + "). Please try again." }; })
        .then(function (j) { j.status = r.status; j.retryAfter = Number(r.headers.get("Retry-After")) || 2; return j; });
    }).then(function (j) {
      if (j.ok) {
        clearDraft(form);
        if (typeof j.page === "string" && swapInPage(j.page, j.redirect)) return;
        window.location.replace(j.redirect || window.location.href);  // no extra history entry: back stays sane
        return;
      }
      if (j.status === 409) {
        clearDraft(form);
        showError(form, (j.error || "This task was already answered.") + " (Perhaps in another tab.) Loading the next one…");
        setTimeout(function () { window.location.replace(window.location.href); }, 2500);
        return;
      }
      if (j.status === 503) {  // busy: the same answer (same request id) is sent again, never stored twice
        release();
        showError(form, "The study is busy; your answer is sent again in " + j.retryAfter + " s.", null);
        setTimeout(function () { form.requestSubmit(); }, 1000 * j.retryAfter);
        return;
      }
      release();
      showError(form, j.error || "Something went wrong.", j.status >= 500 ? function () { form.requestSubmit(); } : null);
      // the field the server names as the reason ({"invalid": name}): marked for screen readers, focused
      var field = typeof j.invalid === "string" ? form.elements.namedItem(j.invalid) : null;
      if (field && field.setAttribute) {
        field.setAttribute("aria-invalid", "true");
        field.focus();
      }
    }).catch(function () {
      release();
      showError(form, NETWORK_MESSAGE + " Your answer was not sent yet.", function () { form.requestSubmit(); });
    });
  }
  // -- how texts are entered (quality/typing.py) ----------------------------------------------------
  // Per form, counts only: keys that produced a character, characters and events pasted, the time from
  // the first key or paste to the submit, the length sent. No key and no pasted text is kept.
  var TEXT_FIELDS = "textarea, input[type=text]";
  var typing = new WeakMap();
  function typingOf(form) {
    var t = typing.get(form);
    if (!t) { t = { typed: 0, pasted: 0, pastes: 0, start: 0 }; typing.set(form, t); }
    return t;
  }
  document.addEventListener("keydown", function (e) {
    var el = e.target;
    if (!el || !el.form || !el.matches || !el.matches(TEXT_FIELDS)) return;
    if (e.key && e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) {
      var t = typingOf(el.form);
      t.typed += 1;
      if (!t.start) t.start = Date.now();
    }
  }, true);
  document.addEventListener("paste", function (e) {
    var el = e.target;
    if (!el || !el.form || !el.matches || !el.matches(TEXT_FIELDS)) return;
    var text = (e.clipboardData && e.clipboardData.getData("text")) || "";
    var t = typingOf(el.form);
    t.pasted += text.length;
    t.pastes += 1;
    if (!t.start) t.start = Date.now();
  }, true);
  function takeSignals(form) {
    // the counts of this form's texts since the last submit, as sent with it (then started afresh)
    var t = typing.get(form);
    if (!t) return null;
    var chars = 0;
    form.querySelectorAll(TEXT_FIELDS).forEach(function (el) { chars += (el.value || "").length; });
    typing.delete(form);
    return { typed: t.typed, pasted: t.pasted, pastes: t.pastes, active_ms: t.start ? Date.now() - t.start : 0, chars: chars };
  }
  function stampSignals(form) {
    var signals = takeSignals(form);
    if (!signals) return;
    var field = form.querySelector('input[name="input_signals"]');
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = "input_signals";
      form.appendChild(field);
    }
    field.value = JSON.stringify(signals);
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form && !form.hasAttribute("data-chat-send")) stampSignals(form);  // chat messages: chat.js sends them
    if (form && form.hasAttribute("data-ajax")) submitAjax(form, ev);
  });

  // -- the same task open in two tabs ----------------------------------------------------------------
  // Set up once per document, when it first shows a task (at its load, or when swapInPage brings one
  // into a session page); the task it speaks of is read at each message, as an answer can bring the
  // next task into this page (swapInPage, which calls announceTask again).
  var announceTask = function () {};
  var watchingTabs = false;
  function watchOtherTabs() {
    var banner = document.getElementById("other-tab");
    if (watchingTabs || !document.body.getAttribute("data-task") || !banner) return;
    watchingTabs = true;
    var me = requestId();
    function task() { return document.body.getAttribute("data-task"); }
    function seen() { banner.hidden = false; }
    if ("BroadcastChannel" in window) {
      var channel = new BroadcastChannel("dialeval-tabs");
      channel.onmessage = function (e) {
        var m = e.data || {};
        if (m.task !== task() || m.tab === me) return;
        seen();
        if (m.type === "hello") channel.postMessage({ type: "here", task: task(), tab: me });
      };
      announceTask = function () { channel.postMessage({ type: "hello", task: task(), tab: me }); };
      window.addEventListener("pagehide", function () { channel.close(); });
    } else {
      var store = storage();
      if (!store) return;
      window.addEventListener("storage", function (e) {
        if (e.key !== "dialeval:tab:" + task() || !e.newValue) return;
        var m = JSON.parse(e.newValue);
        if (m.tab === me) return;
        seen();
        if (m.type === "hello") store.setItem("dialeval:tab:" + task(), JSON.stringify({ type: "here", tab: me, at: Date.now() }));
      });
      announceTask = function () {
        store.setItem("dialeval:tab:" + task(), JSON.stringify({ type: "hello", tab: me, at: Date.now() }));
      };
    }
    announceTask();
  }

  // -- the next page, brought by a form's reply (pages.NEXT_PAGE_HEADER) ------------------------------
  // An answer's reply brings the next task page; the entry, consent and instructions forms' replies
  // bring the page that follows them. The server's page is parsed as a document of its own (its
  // scripts never run); its header, <main> and "How to" dialog take the place of this page's, the
  // stylesheets it adds are loaded first (no unstyled flash), and what a page load sets up is set up
  // again. False when it cannot be swapped in (not one of our pages, or a page with a script this
  // one has not loaded): the caller loads the URL instead.
  // The swapped-in page's header. Its progress region (role=status) stays the same element and only
  // its content changes: a screen reader announces a change of a live region it already knows, not
  // the content of one inserted anew. The header's other parts are replaced.
  function updateHeader(hereBar, freshBar) {
    var hereProgress = hereBar.querySelector("#progress"), freshProgress = freshBar.querySelector("#progress");
    if (!hereProgress || !freshProgress || hereProgress.parentNode !== hereBar || freshProgress.parentNode !== freshBar) {
      hereBar.replaceWith(freshBar);
      return;
    }
    hereBar.className = freshBar.className;
    Array.prototype.slice.call(hereBar.childNodes).forEach(function (node) {
      if (node !== hereProgress) hereBar.removeChild(node);
    });
    var before = true;
    Array.prototype.slice.call(freshBar.childNodes).forEach(function (node) {
      if (node === freshProgress) { before = false; return; }
      if (before) hereBar.insertBefore(node, hereProgress); else hereBar.appendChild(node);
    });
    while (hereProgress.firstChild) hereProgress.removeChild(hereProgress.firstChild);
    while (freshProgress.firstChild) hereProgress.appendChild(freshProgress.firstChild);
  }

  function absolute(url) { return new URL(url, window.location.href).href; }
  function scriptsLoaded(doc) {
    var here = Array.prototype.map.call(document.querySelectorAll("script[src]"), function (s) { return s.src; });
    return Array.prototype.every.call(doc.querySelectorAll("script[src]"), function (s) {
      return here.indexOf(absolute(s.getAttribute("src"))) !== -1;
    });
  }
  function newStylesheets(doc) {
    var here = Array.prototype.map.call(document.querySelectorAll('link[rel="stylesheet"]'), function (l) { return l.href; });
    return Array.prototype.filter.call(doc.head.querySelectorAll('link[rel="stylesheet"]'), function (l) {
      return here.indexOf(absolute(l.getAttribute("href"))) === -1;
    }).map(function (l) { return document.importNode(l, true); });
  }
  function mirror(source, selector, parent) {
    // this page's element as the new page has it: replaced, added after `parent`'s last one, or removed
    var fresh = source.querySelector(selector), here = document.querySelector(selector);
    if (fresh && here) here.replaceWith(document.importNode(fresh, true));
    else if (fresh) parent.appendChild(document.importNode(fresh, true));
    else if (here) here.remove();
  }

  // The page this document shows. Back or forward to another page's entry (one swapInPage pushed)
  // loads that page; a move within the page (the skip link's #main) does not.
  function withoutHash(url) { return url.split("#")[0]; }
  var shownPage = withoutHash(window.location.href);
  window.addEventListener("popstate", function () {
    if (withoutHash(window.location.href) !== shownPage) window.location.reload();
  });

  function swapInPage(html, url) {
    var doc;
    try { doc = new DOMParser().parseFromString(html, "text/html"); } catch (e) { return false; }
    var main = doc.getElementById("main"), bar = doc.querySelector("header.topbar");
    var hereMain = document.getElementById("main"), hereBar = document.querySelector("header.topbar");
    if (!main || !bar || !hereMain || !hereBar || !scriptsLoaded(doc)) return false;
    var sheets = newStylesheets(doc), swapped = false;
    function swap() {
      if (swapped) return;
      swapped = true;
      var csrfMeta = document.querySelector('meta[name="csrf-token"]'), freshCsrf = doc.querySelector('meta[name="csrf-token"]');
      if (csrfMeta && freshCsrf) csrfMeta.setAttribute("content", freshCsrf.getAttribute("content"));
      mirror(doc, 'meta[name="dialeval-session"]', document.head);  // a cookie-less session's token
      document.title = doc.title;
      updateHeader(hereBar, document.importNode(bar, true));
      var freshMain = document.importNode(main, true);
      hereMain.replaceWith(freshMain);
      var dialog = doc.getElementById("howto"), hereDialog = document.getElementById("howto");
      if (hereDialog) hereDialog.remove();
      if (dialog) freshMain.after(document.importNode(dialog, true));
      var taskToTask = document.body.hasAttribute("data-task") && doc.body.hasAttribute("data-task");
      document.body.className = doc.body.className;
      ["data-task", "data-next-page"].forEach(function (name) {
        if (doc.body.hasAttribute(name)) document.body.setAttribute(name, doc.body.getAttribute(name));
        else document.body.removeAttribute(name);
      });
      var banner = document.getElementById("other-tab");
      if (banner) banner.hidden = true;  // that was about the task answered
      if (url) {
        // the next task takes the answered one's place in the history; another page gets its own
        // entry, as a loaded page would (back from the first task goes to the instructions)
        var target = absolute(url);
        if (target !== window.location.href) {
          if (taskToTask) window.history.replaceState(window.history.state, "", target);
          else window.history.pushState(null, "", target);
        }
      }
      shownPage = withoutHash(window.location.href);
      pageReady();
      watchOtherTabs();  // once per document: the first task page may come into a session page
      announceTask();
      window.scrollTo(0, 0);
      document.getElementById("main").focus({ preventScroll: true });  // read from the top, as after a load
    }
    if (!sheets.length) {
      swap();
      return true;
    }
    var waiting = sheets.length;
    sheets.forEach(function (link) {
      function loaded() { if (--waiting === 0) swap(); }
      link.addEventListener("load", loaded);
      link.addEventListener("error", loaded);
      document.head.appendChild(link);
    });
    setTimeout(swap, 3000);  // a stylesheet that never answers: show the page anyway
    return true;
  }

  // -- keyboard: number keys choose (shown on the buttons as <kbd>) -------------------------------------
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && /^(text|search|email|number|range)$/.test(t.type)) || t.isContentEditable)) return;
    if (!/^[0-9]$/.test(e.key)) return;
    if (document.querySelector("dialog[open]")) return;
    var input = document.querySelector('input[data-key="' + e.key + '"]');
    if (!input || input.disabled) return;
    e.preventDefault();
    if (input.type === "checkbox") input.checked = !input.checked; else input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    input.focus();
  });

  // -- "How to": the instructions in a dialog over the task, so nothing on the page is lost ------------
  function initHowto() {
    var link = document.querySelector("[data-howto]");
    var dialog = document.getElementById("howto");
    if (!link || !dialog || typeof dialog.showModal !== "function") return;
    link.addEventListener("click", function (e) {
      e.preventDefault();
      dialog.showModal();
    });
  }

  // -- copy buttons (the done page's completion code) ------------------------------------------------
  // Shown only where this script runs (the page's CSP allows no inline script); the clipboard API
  // needs a secure context, so on plain http the code's text is selected for Ctrl+C instead.
  function initCopy() {
    document.querySelectorAll("button[data-copy-target]").forEach(function (button) {
      var target = document.getElementById(button.getAttribute("data-copy-target"));
      var status = document.getElementById(button.getAttribute("aria-describedby") || "");
      if (!target) return;
      button.hidden = false;
      button.addEventListener("click", function () {
        var text = target.textContent.trim();
        function say(message) { if (status) status.textContent = message; }
        function select() {
          var range = document.createRange();
          range.selectNodeContents(target);
          var sel = window.getSelection();
          sel.removeAllRanges();
          sel.addRange(range);
          say("Selected: press Ctrl+C (or Cmd+C) to copy.");
        }
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(function () { say("Copied."); }, select);
        } else {
          select();
        }
      });
    });
  }

  // -- conversation tabs on narrow screens (ACUTE-Eval) -----------------------------------------------
  function initTabs() {
    var list = document.querySelector(".tabs[role=tablist]");
    if (!list) return;
    list.hidden = false;
    var tabs = Array.prototype.slice.call(list.querySelectorAll("[role=tab]"));
    function select(tab) {
      tabs.forEach(function (t) {
        var on = t === tab;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        var panel = document.getElementById(t.getAttribute("aria-controls"));
        if (panel) panel.classList.toggle("tab-hidden", !on);
      });
    }
    tabs.forEach(function (tab, i) {
      tab.addEventListener("click", function () { select(tab); });
      tab.addEventListener("keydown", function (e) {
        if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
        var next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
        select(next);
        next.focus();
      });
    });
    select(tabs[0]);
  }

  // When the task page was shown (loaded, or swapped in): its forms send the time since (elapsed_ms).
  var shownAt = null;
  document.addEventListener("submit", function () {
    if (shownAt === null) return;
    var ms = String(Date.now() - shownAt);
    document.querySelectorAll("input[name=elapsed_ms]").forEach(function (i) { i.value = ms; });
  }, true);
  // What a page's own content needs, at its load and again when swapInPage brings the next one.
  function pageReady() {
    shownAt = document.querySelector("input[name=elapsed_ms]") ? Date.now() : null;
    initDrafts(document);
    initHowto();
    initTabs();
    initCopy();
  }
  document.addEventListener("DOMContentLoaded", function () {
    var auto = document.querySelector("form[data-autosubmit]");
    if (auto) setTimeout(function () { auto.submit(); }, 1500);
    pageReady();
    watchOtherTabs();
  });
  // A page restored from the back/forward cache may be out of date: ask the server again.
  window.addEventListener("pageshow", function (e) {
    if (e.persisted && document.body.getAttribute("data-task")) window.location.reload();
  });
  // A streamed bot reply in `el`, one chunk event at a time ({text, html?}, protocols/live.py). An
  // event with `html` carries the server's sanitised Markdown of the whole reply so far (nh3 allow-list,
  // never raw bot text): it replaces what is shown. Text that arrives after it waits in a plain-text
  // tail (textContent) until the next rendering. Without `html` (a study showing raw text) only the tail.
  function showBotChunk(el, ev) {
    if (el.classList.contains("typing")) {
      el.classList.remove("typing");
      el.textContent = "";
    }
    var md = el.querySelector(":scope > .md"), tail = el.querySelector(":scope > .md-tail");
    if (!tail) {
      tail = document.createElement("span");
      tail.className = "md-tail";
      el.appendChild(tail);
    }
    if (typeof ev.html === "string") {
      if (!md) {
        md = document.createElement("div");
        md.className = "md";
        el.insertBefore(md, tail);
      }
      md.innerHTML = ev.html;
      tail.textContent = "";
    } else {
      tail.textContent += ev.text || "";
    }
  }

  window.dialeval = { takeSignals: takeSignals, showBotChunk: showBotChunk, post: post, appendText: appendText, csrf: csrf, requestId: requestId, initDrafts: initDrafts,
                      clearDraft: clearDraft, saveDraft: saveDraft, showError: showError, NETWORK_MESSAGE: NETWORK_MESSAGE };
})();
