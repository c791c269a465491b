// Keyhaven's frame inside a page (ui.html, extension origin; content.js places it in a closed shadow
// root in the top layer). It shows what the background sends — the AutoFill menu, the passkey
// sheet, the save prompt — and reports the person's choice. The page cannot read this frame (another
// origin) nor send it events; on top of that a choice counts only when it is a real (`isTrusted`)
// click or key, not in the first 400 ms after the view appeared (a page cannot slip the frame under
// a click meant for something else), and — where the browser can tell (IntersectionObserver v2) —
// only while the frame is not covered or faded by the page.
"use strict";
(() => {
  const api = globalThis.browser ?? globalThis.chrome;
  const CLICK_DELAY_MS = 400;
  const frameToken = location.hash.slice(1);
  const main = document.getElementById("view");
  let token = null;
  let current = null;
  let shownAt = 0;
  let visible = true;
  let port = null;

  function connect() {
    port = api.runtime.connect({ name: "keyhaven-ui" });
    port.onMessage.addListener(onMessage);
    port.onDisconnect.addListener(() => {
      port = null;
      token = null;
      main.replaceChildren();
    });
    port.postMessage({ type: "hello", frameToken });
  }

  function row(element, text, detail) {
    element.className = "row";
    const label = document.createElement("span");
    label.className = "text";
    label.textContent = text;
    element.append(label);
    if (detail) {
      const small = document.createElement("small");
      small.textContent = detail;
      element.append(small);
    }
    return element;
  }

  function render(view) {
    current = view;
    token = view.token;
    main.replaceChildren();
    main.setAttribute("role", view.kind === "menu" ? "listbox" : "dialog");
    main.dataset.kind = view.kind;
    main.setAttribute("aria-label", view.label || "Keyhaven");
    view.rows.forEach((item, index) => {
      let element;
      if (item.action) {
        element = row(document.createElement("button"), item.text, item.detail);
        element.type = "button";
        if (view.kind === "menu") element.setAttribute("role", "option");
        if (item.primary) element.classList.add("primary");
        element.dataset.index = String(index);
        element.addEventListener("click", (event) => choose(event, index));
        element.addEventListener("mousedown", (event) => event.preventDefault());
      } else {
        element = row(document.createElement(item.title ? "h1" : "p"), item.text, item.detail);
        element.classList.add(item.title ? "title" : "note");
        if (item.status) element.setAttribute("role", "status");
      }
      main.append(element);
    });
    shownAt = performance.now();
    document.body.dataset.rendered = String(performance.timeOrigin + shownAt);
  }

  async function choose(event, index) {
    // Real input only, not right after the view changed, and not while covered.
    if (!event.isTrusted || !token || !port) return;
    if (performance.now() - shownAt < CLICK_DELAY_MS) return;
    const chosenToken = token;
    if (!visible) {
      // The last report said covered or faded — possibly a stale one from before the frame was
      // shown: the browser looks again now.
      visible = await freshVisibility();
      if (!visible) {
        render(current); // nothing happens, and the delay starts again
        return;
      }
    }
    if (token !== chosenToken || !port) return;
    document.body.dataset.chosen = String(performance.timeOrigin + performance.now());
    port.postMessage({ type: "choose", token, index });
  }

  function actionable() {
    return [...main.querySelectorAll("button.row")];
  }

  function onMessage(message) {
    if (message.type === "view") render(message.view);
    else if (message.type === "clear") {
      token = null;
      main.replaceChildren();
    } else if (message.type === "focus") {
      const first = actionable()[0];
      if (first) first.focus();
    }
  }

  document.addEventListener("keydown", (event) => {
    if (!event.isTrusted) return;
    const buttons = actionable();
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = event.key === "ArrowDown" ? Math.min(buttons.length - 1, at + 1) : Math.max(0, at - 1);
      if (buttons[next]) buttons[next].focus();
    } else if (event.key === "Escape" && token && port) {
      port.postMessage({ type: "dismiss", token });
    } else if ((event.key === "Enter" || event.key === " ") && at >= 0) {
      event.preventDefault();
      choose(event, Number(buttons[at].dataset.index));
    }
  });

  // Chromium reports whether the frame is really visible (not occluded, faded or transformed by
  // the page); other browsers leave it to the checks the background asks content.js to make.
  const tracksVisibility = "isVisible" in (globalThis.IntersectionObserverEntry?.prototype ?? {});

  /** A new measurement (a new observer's first report) of whether the frame is visible now. */
  function freshVisibility() {
    if (!tracksVisibility) return Promise.resolve(true);
    return new Promise((resolve) => {
      let done = false;
      const finish = (value) => {
        if (done) return;
        done = true;
        observer.disconnect();
        resolve(value);
      };
      const observer = new IntersectionObserver((entries) => finish(entries[entries.length - 1].isVisible === true), {
        trackVisibility: true,
        delay: 100,
      });
      observer.observe(document.body);
      setTimeout(() => finish(false), 600);
    });
  }

  try {
    const observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) if (entry.isVisible !== undefined) visible = entry.isVisible;
      },
      { trackVisibility: true, delay: 100 }
    );
    observer.observe(document.body);
  } catch {
    visible = true;
  }

  connect();
})();
