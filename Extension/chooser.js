// "Other passwords…" (Apple's credential list): every password in Keyhaven, those for the page
// first. It is a page of the extension's own, opened by the background from the AutoFill menu: the
// site cannot read or click it, so the person's confirmation here is what lets a password saved for
// another site fill the page.
"use strict";
(() => {
  const ask = globalThis.keyhavenAsk;
  const token = location.hash.slice(1);
  const list = document.getElementById("list");
  const filter = document.getElementById("filter");
  const confirm = document.getElementById("confirm");
  const question = document.getElementById("question");
  const status = document.getElementById("status");
  let identities = [];
  let host = "";
  let chosen = null;

  function render() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.replaceChildren();
    for (const identity of identities) {
      const text = `${identity.user} ${identity.serviceIdentifier}`.toLowerCase();
      if (!words.every((word) => text.includes(word))) continue;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "choice";
      button.setAttribute("role", "option");
      button.dataset.index = String(identity.index);
      button.append(identity.user || "(no user name)");
      const site = document.createElement("span");
      site.textContent = ` · ${identity.serviceIdentifier}${identity.match ? " (this site)" : ""}`;
      button.append(site);
      button.addEventListener("click", (event) => {
        if (!event.isTrusted) return;
        chosen = identity;
        question.textContent = identity.match
          ? `Fill ${identity.user || "this account"} on ${host}?`
          : `Use the password saved for ${identity.serviceIdentifier} on ${host}? ${host} is another site.`;
        document.getElementById("fill").textContent = `Fill ${identity.user || "it"} on ${host}`;
        confirm.hidden = false;
        document.getElementById("fill").focus();
      });
      list.append(button);
    }
  }

  document.getElementById("fill").addEventListener("click", async (event) => {
    if (!event.isTrusted || !chosen) return;
    status.textContent = "Filling…";
    try {
      await ask({ kind: "chooser.fill", token, index: chosen.index });
      status.textContent = "Filled.";
      document.body.dataset.state = "filled";
    } catch (error) {
      status.textContent = error.localizedFailureReason || "Keyhaven could not fill it.";
    }
  });
  document.getElementById("back").addEventListener("click", () => {
    chosen = null;
    confirm.hidden = true;
  });
  filter.addEventListener("input", render);

  ask({ kind: "chooser.get", token }).then(
    (answer) => {
      identities = answer.identities;
      host = answer.host;
      document.getElementById("intro").textContent = `Choose a password to fill on ${host}.`;
      render();
      document.body.dataset.state = "ready";
      filter.focus();
    },
    (error) => {
      document.getElementById("intro").textContent = error.localizedFailureReason || "Keyhaven could not list the passwords.";
      document.body.dataset.state = "failed";
    }
  );
})();
