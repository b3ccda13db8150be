// The arena's page script (methods/arena/templates/arena.html), loaded before the shared live-chat
// script (static/chat.js), which announces the page's steps as events on document.
// The vote-change window: the server makes a held vote final when its window ends or the next
// message is sent. The page follows it: it counts the window down, then folds the panel into the
// round's "Your vote" line, so it never offers a change the server would refuse nor shows a vote
// other than the stored one. And the reveal: who the two models were, once the last vote is final.
(function () {
  "use strict";
  function helpers() { return window.dialeval || {}; }
  var voteTimer = null;

  function startVoteWindow(root) {
    if (voteTimer) { clearInterval(voteTimer); voteTimer = null; }
    var box = root.querySelector("#vote-window");
    if (!box) return;
    var endAt = Date.now() + 1000 * Number(box.getAttribute("data-seconds-left") || 0);
    var countdown = box.querySelector("[data-countdown]");
    var tick = function () {
      var left = Math.ceil((endAt - Date.now()) / 1000);
      if (left <= 0) { closeVoteWindow(root, ""); return; }
      if (countdown) countdown.textContent = left + " more second" + (left === 1 ? "" : "s");
    };
    tick();
    if (root.querySelector("#vote-window")) voteTimer = setInterval(tick, 250);
  }

  // `why`: the server's word when it refused a change (shown beside the vote it kept).
  function closeVoteWindow(root, why) {
    if (voteTimer) { clearInterval(voteTimer); voteTimer = null; }
    var box = root.querySelector("#vote-window");
    if (!box || !box.parentNode) return;
    var rounds = root.querySelectorAll(".arena-round");
    var round = rounds[rounds.length - 1];
    box.parentNode.removeChild(box);
    if (round) {
      var note = document.createElement("p");
      note.className = "side-note";
      note.id = "final-vote";
      note.textContent = "Your vote: " + box.getAttribute("data-vote-label") + (why ? " — " + why : "");
      round.appendChild(note);
    }
    // the battle's last vote: final now, so close the battle and show who the models were
    var next = box.getAttribute("data-last") === "1" && root.querySelector("#next-form[data-reveal]");
    if (next && !next.hidden) {
      next.requestSubmit ? next.requestSubmit() : next.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  }

  function showReveal(root, form, reveal, next) {
    var panel = root.querySelector("#reveal");
    if (!panel) return false;
    var names = panel.querySelectorAll("[data-reveal-name]");
    reveal.forEach(function (r, i) { if (names[i]) names[i].textContent = r.name; });
    var link = panel.querySelector("#after-reveal");
    if (link && next) link.setAttribute("href", next);
    form.hidden = true;
    panel.hidden = false;
    var title = panel.querySelector("h2");
    if (title) title.focus();
    return true;
  }

  document.addEventListener("dialeval:live-ready", function (e) { startVoteWindow(e.detail.root); });

  // sending the next message ended the window: that vote is final
  document.addEventListener("dialeval:message-sent", function (e) { closeVoteWindow(e.detail.root, ""); });

  document.addEventListener("dialeval:form-done", function (e) {
    var d = e.detail, res = d.response;
    if (res.reveal && d.form.hasAttribute("data-reveal") && showReveal(d.root, d.form, res.reveal, res.redirect)) {
      e.preventDefault();
    }
  });

  document.addEventListener("dialeval:form-failed", function (e) {
    var d = e.detail, err = d.error;
    var held = d.form.closest("#vote-window");
    if (held && !err.network && err.status >= 400 && err.status < 500 && err.status !== 429) {
      // a change the server refused (the window is over): the vote it kept, never the tick
      var kept = d.form.querySelector('input[name="winner"][value="' + held.getAttribute("data-vote") + '"]');
      if (kept) kept.checked = true;
      if (helpers().clearDraft) helpers().clearDraft(d.form);
      closeVoteWindow(d.root, err.message);
      e.preventDefault();
    }
  });
})();
