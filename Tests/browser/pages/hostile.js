// What a hostile page (or a script injected into an honest one) tries against Keyhaven's in-page UI.
// Everything it learns goes into window.loot; the tests assert that none of it holds a user name, a
// site or a password, and that nothing it did filled, saved or signed anything.
(() => {
  "use strict";
  const loot = (window.loot = { added: [], reads: [], values: [], outcomes: [] });
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        loot.added.push({ tag: node.tagName, html: node.outerHTML, text: node.textContent, shadow: node.shadowRoot ? node.shadowRoot.innerHTML : null });
      }
    }
  }).observe(document.documentElement, { childList: true, subtree: true, attributes: true, characterData: true });

  function keyhavenElements() {
    return [...document.querySelectorAll("*")].filter((element) => element.tagName.toLowerCase().startsWith("keyhaven"));
  }

  /** Every way a page might read what Keyhaven shows. */
  window.readKeyhaven = () => {
    const read = { elements: [], frames: window.frames.length };
    for (const element of keyhavenElements()) {
      const rect = element.getBoundingClientRect();
      read.elements.push({
        tag: element.tagName, shadowRoot: element.shadowRoot ? element.shadowRoot.innerHTML : null, text: element.textContent,
        innerText: element.innerText, open: element.matches(":popover-open"), width: rect.width, height: rect.height,
      });
    }
    const selection = document.getSelection();
    selection.selectAllChildren(document.documentElement);
    read.selection = String(selection);
    selection.removeAllRanges();
    read.innerText = document.documentElement.innerText;
    read.found = ["ada", "victim", "bank", "mail", "elsewhere", "Secret", "passkey"].filter((word) => window.find && window.find(word));
    for (let index = 0; index < window.frames.length; index++) {
      try {
        read[`frame${index}`] = window.frames[index].document.documentElement.outerHTML;
      } catch (error) {
        read[`frame${index}`] = String(error.name);
      }
    }
    loot.reads.push(read);
    return read;
  };

  /** Synthetic pointer and key events on and around Keyhaven's elements. */
  window.clickKeyhaven = () => {
    let dispatched = 0;
    for (const element of keyhavenElements()) {
      const rect = element.getBoundingClientRect();
      for (let y = rect.top + 4; y < rect.bottom; y += 8) {
        const x = rect.left + Math.min(40, rect.width / 2);
        const target = document.elementFromPoint(x, y) || element;
        for (const type of ["pointerdown", "mousedown", "pointerup", "mouseup", "click"]) {
          const init = { bubbles: true, composed: true, cancelable: true, clientX: x, clientY: y, view: window };
          target.dispatchEvent(type.startsWith("pointer") ? new PointerEvent(type, init) : new MouseEvent(type, init));
          dispatched++;
        }
        for (const key of ["ArrowDown", "Enter", " "]) {
          target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, composed: true }));
          dispatched++;
        }
      }
      element.click();
      element.focus();
      element.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, composed: true }));
    }
    return dispatched;
  };

  /** Focus by script, then everything else a page can do without the person. */
  window.attackField = async (id) => {
    const field = document.getElementById(id);
    field.focus();
    field.click();
    field.dispatchEvent(new PointerEvent("pointerdown", { bubbles: true, composed: true }));
    field.dispatchEvent(new MouseEvent("mousedown", { bubbles: true, composed: true }));
    field.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true, composed: true }));
    await new Promise((resolve) => setTimeout(resolve, 900));
    window.readKeyhaven();
    window.clickKeyhaven();
    await new Promise((resolve) => setTimeout(resolve, 900));
    window.clickKeyhaven();
    await new Promise((resolve) => setTimeout(resolve, 600));
    loot.values.push([...document.querySelectorAll("input")].map((input) => input.value));
    return window.readKeyhaven();
  };

  window.shownByKeyhaven = () => keyhavenElements().some((element) => element.matches(":popover-open"));
})();
