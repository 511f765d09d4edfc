// The page's only script: filters, collapse/expand, and the token view built on demand.
// All text goes in through textContent / title, never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("token-data").textContent);

  function applyFilter(value) {
    document.body.classList.toggle("show-zero", value === "zero");
    document.body.classList.toggle("show-errors", value === "errors");
    document.querySelectorAll("section.group").forEach(function (section) {
      var visible = Array.prototype.some.call(section.querySelectorAll(".rollout"), function (r) {
        return getComputedStyle(r).display !== "none";
      });
      section.classList.toggle("empty", !visible);
    });
  }
  document.querySelectorAll('input[name="show"]').forEach(function (radio) {
    radio.addEventListener("change", function () { applyFilter(radio.value); });
  });
  function setOpen(open) {
    document.querySelectorAll("details.rollout").forEach(function (d) { d.open = open; });
  }
  document.getElementById("collapse-all").addEventListener("click", function () { setOpen(false); });
  document.getElementById("expand-all").addEventListener("click", function () { setOpen(true); });
  var colour = document.getElementById("token-colour");
  colour.addEventListener("change", function () {
    document.body.classList.toggle("lp", colour.value === "logprob");
  });

  function tokenText(id) {
    var text = data.text[String(id)];
    return text === undefined ? "[" + id + "]" : text;
  }

  function buildTokens(ref, box) {
    var parts = ref.split(":");
    var group = data.groups[Number(parts[0])];
    var rollout = group.rollouts[Number(parts[1])];
    var prompt = data.filePrefix.concat(group.prefix);
    var legend = document.createElement("div");
    legend.className = "legend";
    var trainedCount = 0;
    for (var k = 0; k < rollout.trained.length; k++) if (rollout.trained[k] === "1") trainedCount++;
    legend.textContent = (prompt.length + rollout.ids.length) + " tokens, " + trainedCount +
      " trained (green; hover a token for its id and logprob" +
      (rollout.adv ? ", advantage" : "") + (rollout.t1 ? ", teacher top-1" : "") + ")" +
      (data.decoded ? "" : "; no tokenizer was given, so tokens show as [id]");
    var stream = document.createElement("div");
    stream.className = "stream";
    var frag = document.createDocumentFragment();
    var position = 0;
    prompt.forEach(function (id) {
      var span = document.createElement("span");
      span.className = "tok p";
      span.textContent = tokenText(id);
      span.title = "#" + position + " id " + id + " · not trained";
      frag.appendChild(span);
      position++;
    });
    var lpIndex = 0;
    rollout.ids.forEach(function (id, i) {
      var span = document.createElement("span");
      var trained = rollout.trained[i] === "1";
      span.className = trained ? "tok t" : "tok p";
      span.textContent = tokenText(id);
      if (trained) {
        var lp = rollout.lp[lpIndex++];
        span.title = "#" + position + " id " + id + " · trained · logprob " + lp;
        if (rollout.adv) span.title += " · advantage " + rollout.adv[lpIndex - 1];
        if (rollout.t1) {
          span.title += " · teacher top-1 " + JSON.stringify(tokenText(rollout.t1[lpIndex - 1])) +
            " (logprob " + rollout.t1lp[lpIndex - 1] + ")";
        }
        span.style.setProperty("--h", String(Math.round(120 * Math.exp(lp))));
      } else {
        span.title = "#" + position + " id " + id + " · not trained";
      }
      frag.appendChild(span);
      position++;
    });
    stream.appendChild(frag);
    box.appendChild(legend);
    box.appendChild(stream);
  }

  document.querySelectorAll("button.tokens-toggle").forEach(function (button) {
    button.addEventListener("click", function () {
      var box = button.closest(".rollout").querySelector(".tokens");
      var first = !box.dataset.built;
      if (first) {
        buildTokens(button.dataset.ref, box);
        box.dataset.built = "1";
      }
      box.hidden = !box.hidden;
      button.textContent = box.hidden ? "show tokens" : "hide tokens";
      if (first && !box.hidden) {
        // The prompt (system, tools, task) comes first; start where the model's first trained token is.
        var trained = box.querySelector(".tok.t");
        if (trained) box.scrollTop = Math.max(0, trained.offsetTop - 40);
      }
    });
  });
  // view.html#tokens opens every rollout's token view (handy for searching tokens, and for tests).
  if (location.hash === "#tokens") {
    document.querySelectorAll("button.tokens-toggle").forEach(function (b) { b.click(); });
  }
})();
