#!/usr/bin/env node
// Checks every script Keyhaven sends to a browser, with node alone (no npm, no eslint):
//   - the browser extension (Extension/*.js, *.html);
//   - each web app's scripts (Sources/<Target>/Resources/*.js: the web app, shiny, the provider),
//     which SwiftPM compiles in (`.embedInCode` in Package.swift);
//   - the pages those apps write in Swift (Sources/**/*.swift): no inline script, no inline handler.
//
// Each script must parse (`node --check`) and must not write markup or run strings as code: every
// page's Content-Security-Policy forbids inline script, and the scripts put text into pages only
// through `textContent` and nodes they build.
//
// Usage: scripts/lint-browser-scripts.mjs [FILE…]   (no FILE: everything above; exit 1 on a problem)
// scripts/soundness.sh runs it; _KeyhavenWebTests.BrowserScriptTests runs it too, and checks that it
// fails on a bad script.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** Patterns no browser script may contain: [pattern, why]. */
const scriptRules = [
  [/\.(innerHTML|outerHTML)\b/, "writes markup: build nodes and set textContent"],
  [/\binsertAdjacentHTML\b|\bcreateContextualFragment\b/, "writes markup: build nodes and set textContent"],
  [/\bdocument\.write(ln)?\s*\(/, "document.write writes markup"],
  [/\.srcdoc\b/, "srcdoc writes markup"],
  [/(^|[^.\w])eval\s*\(/, "eval runs a string as code"],
  [/\bnew\s+Function\s*\(/, "new Function runs a string as code"],
  [/\bset(Timeout|Interval)\s*\(\s*["'`]/, "a timer given a string runs it as code"],
  [/\.setAttribute\(\s*["'`]on/i, "an inline event handler: use addEventListener"],
  [/javascript:/i, "a javascript: URL is inline script"],
];

/** Patterns no page may contain (Extension/*.html, and HTML written in Swift). */
const pageRules = [
  [/<script(?![^>]*\bsrc=)[^>]*>/i, "an inline <script>: serve the script as a file"],
  [/<[a-z][^>]*\son[a-z]+\s*=/i, "an inline event handler: use addEventListener in the page's script"],
  [/javascript:/i, "a javascript: URL is inline script"],
];

function files(directory, keep) {
  if (!existsSync(directory)) return [];
  return readdirSync(directory, { recursive: true })
    .map((name) => join(directory, name))
    .filter((path) => statSync(path).isFile() && keep(path))
    .sort();
}

function defaultFiles() {
  const scripts = [".js", ".mjs"];
  const found = files(join(root, "Extension"), (path) => [...scripts, ".html"].includes(extname(path)));
  for (const target of readdirSync(join(root, "Sources")).sort()) {
    found.push(...files(join(root, "Sources", target, "Resources"), (path) => scripts.includes(extname(path))));
  }
  found.push(
    ...files(join(root, "Sources"), (path) => path.endsWith(".swift") && !path.endsWith(".generated.swift")),
  );
  return found;
}

/** The lines to match rules against: comments left out (`//` lines and `*` lines of block comments). */
function codeLines(text) {
  return text.split("\n").map((line, index) => {
    const trimmed = line.trim();
    const comment = trimmed.startsWith("//") || trimmed.startsWith("*") || trimmed.startsWith("/*");
    return { number: index + 1, text: comment ? "" : line };
  });
}

function check(path) {
  const problems = [];
  const name = relative(root, path) || path;
  const text = readFileSync(path, "utf8");
  const extension = extname(path);
  if (extension === ".js" || extension === ".mjs") {
    const syntax = spawnSync(process.execPath, ["--check", path], { encoding: "utf8" });
    if (syntax.status !== 0) {
      const detail = (syntax.stderr || syntax.stdout).trim().split("\n").slice(0, 5).join("\n  ");
      problems.push(`${name}: does not parse (node --check):\n  ${detail}`);
    }
  }
  const rules = extension === ".html" || extension === ".swift" ? pageRules : scriptRules;
  for (const { number, text: line } of codeLines(text)) {
    for (const [pattern, why] of rules) {
      if (pattern.test(line)) problems.push(`${name}:${number}: ${why}: ${line.trim()}`);
    }
  }
  return problems;
}

const given = process.argv.slice(2).map((path) => resolve(path));
const checked = given.length > 0 ? given : defaultFiles();
const problems = checked.flatMap(check);
if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`lint-browser-scripts: ${problems.length} problem(s) in ${checked.length} files`);
  process.exit(1);
}
console.log(`lint-browser-scripts: ${checked.length} files ok`);
