// `/assets/app.js`: the app's only script, a plain module (no framework, no build step) that adds
// the live parts to pages that read fine without it. It talks to the session's `/api/…` (under the
// base of its paths, `<meta name="keyhaven-base">`) with the session's CSRF token (from the page's
// `<meta name="csrf-token">`) and writes text only through `textContent`, never as markup.
// Compiled into the app by SwiftPM (`.embedInCode`); checked by scripts/lint-browser-scripts.mjs.

const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? "";
// `/s/CAPABILITY`: the session's paths (the cookie alone opens nothing).
const base = document.querySelector('meta[name="keyhaven-base"]')?.content ?? "";

async function api(path, options = {}) {
  const response = await fetch(base + path, {
    credentials: "same-origin",
    ...options,
    headers: { "X-CSRF-Token": csrf, ...(options.headers ?? {}) },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message ?? response.statusText);
  return body;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function acknowledge(button, text) {
  const original = button.textContent;
  button.textContent = text;
  setTimeout(() => { button.textContent = original; }, 1500);
}

const itemPath = (id) => `/api/items/${encodeURIComponent(id)}`;

// Reveal: the password (or a history entry, or a sync conflict's value: `data-reveal-url`) only on
// request; Hide masks it again.
for (const button of document.querySelectorAll("[data-reveal], [data-reveal-url]")) {
  button.addEventListener("click", async () => {
    const target = document.getElementById(button.dataset.target);
    if (button.dataset.shown === "1") {
      target.textContent = "••••••••••••";
      button.textContent = "Reveal";
      button.dataset.shown = "0";
      return;
    }
    const history = button.dataset.history;
    const query = history === undefined ? "" : `?history=${encodeURIComponent(history)}`;
    try {
      const body = await api(button.dataset.revealUrl ?? `${itemPath(button.dataset.reveal)}/password${query}`);
      target.textContent = body.password;
      button.textContent = "Hide";
      button.dataset.shown = "1";
    } catch (error) {
      target.textContent = error.message;
    }
  });
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    acknowledge(button, "Copied");
  } catch {
    acknowledge(button, "Copy failed");
  }
}

for (const button of document.querySelectorAll("[data-copy]")) {
  button.addEventListener("click", async () => {
    const body = await api(`${itemPath(button.dataset.copy)}/password`);
    await copy(body.password, button);
  });
}
for (const button of document.querySelectorAll("[data-copy-text]")) {
  button.addEventListener("click", () => copy(document.getElementById(button.dataset.copyText).textContent, button));
}

// The live one-time code.
const otp = document.querySelector("[data-otp]");
if (otp) {
  const remaining = document.getElementById("otp-remaining");
  const tick = async () => {
    try {
      const body = await api(`${itemPath(otp.dataset.otp)}/otp`);
      otp.textContent = body.code;
      remaining.textContent = `${body.secondsRemaining} s left`;
    } catch (error) {
      remaining.textContent = error.message;
    }
  };
  tick();
  setInterval(tick, 1000);
}

// Search as you type (the server searches its copy of the vault).
const search = document.getElementById("search");
const list = document.getElementById("vault-list");
const words = { breached: "Breached", reused: "Reused", weak: "Weak", otp: "One-time code", passkey: "Passkey",
  "sign-in": "Sign in with Keyhaven" };
const strengthWords = ["Very weak", "Weak", "Fair", "Strong", "Very strong"];
if (search && list) {
  let timer;
  let latest = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const asked = ++latest;
      const body = await api(`/api/items?q=${encodeURIComponent(search.value)}`);
      if (asked !== latest) return;
      list.replaceChildren(...body.items.map((row) => {
        const details = (row.user || "(no user name)") + (row.site && row.site !== row.title ? ` · ${row.site}` : "");
        const link = element("a", { class: "row-link", href: `${base}/items/${encodeURIComponent(row.id)}` },
          element("span", { class: "primary" }, row.title), element("br"), element("span", { class: "muted" }, details));
        const facts = element("span", { class: "row-facts" });
        if (row.badges.length) {
          facts.append(element("span", { class: "badges" },
            ...row.badges.map((badge) => element("span", { class: `badge ${badge}` }, words[badge] ?? badge))));
        }
        if (row.strengthScore !== undefined && row.strengthScore !== null) {
          const score = row.strengthScore;
          facts.append(element("span", { class: "meter", role: "img", "data-score": String(score),
            "aria-label": `Strength: ${strengthWords[score]} (${score} of 4)` },
            ...[0, 1, 2, 3, 4].map(() => element("span"))));
        }
        return element("li", { "data-id": row.id }, link, facts);
      }));
      const count = document.getElementById("result-count");
      count.textContent = body.matched === body.total
        ? `${body.total} passwords`
        : `${body.matched} of ${body.total} passwords match`;
      history.replaceState(null, "", `${base}/vault` + (search.value ? `?q=${encodeURIComponent(search.value)}` : ""));
    }, 60);
  });
}

// Strength as you type (zxcvbn on the server; nothing is stored).
const strengthInput = document.querySelector("[data-strength-input]");
if (strengthInput) {
  const meter = document.getElementById("check-strength");
  const label = document.getElementById("check-words");
  const feedback = document.getElementById("check-feedback");
  let timer;
  strengthInput.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!strengthInput.value) {
        meter.dataset.score = "-1";
        label.textContent = "";
        feedback.textContent = "";
        return;
      }
      const body = await api("/api/strength", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ password: strengthInput.value }),
      });
      meter.dataset.score = String(body.score);
      meter.setAttribute("aria-label", `Strength: ${body.words} (${body.score} of 4)`);
      label.textContent = `${body.words} (${body.score} of 4)`;
      feedback.textContent = [body.warning, ...body.suggestions].filter(Boolean).join(" ");
    }, 120);
  });
}

// Upgrade progress: the page reloads when the phase changes.
const upgrade = document.querySelector("[data-run]");
if (upgrade && upgrade.dataset.phase !== "done") {
  setInterval(async () => {
    try {
      const body = await api(`/api/upgrades/${encodeURIComponent(upgrade.dataset.run)}`);
      if (body.phase !== upgrade.dataset.phase) location.reload();
    } catch {}
  }, 500);
}

// Pairing: the code appears as soon as a browser asks.
const waiting = document.getElementById("pairing-waiting");
if (waiting) {
  const timer = setInterval(async () => {
    const body = await api("/api/pairing/code").catch(() => ({}));
    if (!body.code) return;
    clearInterval(timer);
    document.getElementById("pairing").replaceChildren(
      element("p", { class: "pairing-code", id: "pairing-code" }, body.code),
      element("p", { class: "muted", id: "pairing-client" }, `for ${body.client}`));
  }, 1000);
}

// The audit as it progresses (`#audit-status`): a page made before the findings it shows were
// ready reloads when they are; the recommendations take each site's change-password page and
// upgrade offer as it comes, without a reload.
const auditStatus = document.getElementById("audit-status");
if (auditStatus) {
  const run = auditStatus.dataset.auditRun;
  const waiting = auditStatus.dataset.auditWait === "1";
  let generation = auditStatus.dataset.auditGeneration;
  const upgradeButton = (id, kind, label, style) => {
    const action = kind === "passkey" ? "upgrade-to-passkey" : "upgrade";
    const form = element("form", { class: "inline", method: "post", action: `${base}/items/${encodeURIComponent(id)}/${action}` },
      element("input", { type: "hidden", name: "csrf", value: csrf }),
      element("button", { type: "submit", class: style, id: `${kind}-${id}` }, label));
    form.dataset.action = kind;
    return form;
  };
  const applyChange = (change) => {
    const row = document.querySelector(`li.recommendation[data-id="${CSS.escape(change.id)}"]`);
    const actions = row?.querySelector(".actions");
    if (!actions) return;
    for (const kind of ["passkey", "upgrade"]) document.getElementById(`${kind}-${change.id}`)?.closest("form")?.remove();
    actions.querySelector('[data-action="change"]')?.remove();
    const ignore = document.getElementById(`ignore-${change.id}`)?.closest("form") ?? null;
    const passkey = change.upgrade?.passkey === true;
    if (passkey) actions.insertBefore(upgradeButton(change.id, "passkey", "Upgrade to passkey", ""), ignore);
    if (change.upgrade?.strongPassword === true) {
      actions.insertBefore(upgradeButton(change.id, "upgrade", "Upgrade", passkey ? "secondary" : ""), ignore);
    }
    // Only web pages: a site's answer never becomes a script URL.
    if (typeof change.changePasswordURL === "string" && /^https?:\/\//i.test(change.changePasswordURL)) {
      actions.insertBefore(element("a", { class: "button secondary", "data-action": "change", href: change.changePasswordURL,
        target: "_blank", rel: "noopener noreferrer" }, "Change on website"), ignore);
    }
    row.dataset.updated = "1";
  };
  const poll = async () => {
    let body;
    try {
      body = await api(`/api/audit/updates?since=${encodeURIComponent(generation)}`);
    } catch {
      setTimeout(poll, 2000);
      return;
    }
    // A page made before its findings were ready waits for them (however long the offline
    // checks take), then reloads; a page made from them reloads when the vault changed.
    if (waiting && !body.ready) {
      if (body.status) auditStatus.textContent = body.status;
      setTimeout(poll, 500);
      return;
    }
    if (waiting || String(body.run) !== run) {
      location.reload();
      return;
    }
    for (const change of body.changes) applyChange(change);
    generation = String(body.generation);
    auditStatus.dataset.auditGeneration = generation;
    if (body.lookingUp) {
      auditStatus.textContent = body.status;
      setTimeout(poll, 1000);
      return;
    }
    const unreachable = body.notices.find((notice) => notice.includes("could not be reached"));
    auditStatus.textContent = unreachable ?? "Every website was asked.";
    auditStatus.dataset.done = "1";
  };
  setTimeout(poll, 500);
}
