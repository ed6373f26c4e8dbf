#!/usr/bin/env node
// The browser gates of scripts/site-gates, in headless Debian Chromium driven by playwright-core
// (never a downloaded browser). Pages are loaded over file://, so what is checked is what a
// reader of a downloaded copy of the site sees; the page's own Content-Security-Policy stays in
// force (axe is injected through the DevTools protocol, which the policy does not govern).
//
//   node browser.cjs axe <site dir> <relpath>...
//     axe-core on each page in the light and the dark colour scheme. Fails (exit 1) on any
//     serious or critical violation, and on any console error or uncaught exception (a resource
//     that did not load, a CSP refusal of an inline style or script), printing each.
//   node browser.cjs shots <site dir> <out dir> <kind>=<relpath>...
//     full-page PNG screenshots <kind>-390.png and <kind>-1280.png (light), and for the round
//     page <kind>-390-dark.png and <kind>-1280-dark.png too.
//
// Environment (set by scripts/site-gates): NODE_PATH (the cached node_modules),
// REFEREE_CHROMIUM_BIN (the Chromium binary), REFEREE_AXE_JS (axe.min.js).
// Exit status: 0 pass, 1 gate failure, 2 usage or browser error.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { chromium } = require('playwright-core');

/** Per-navigation and per-evaluation limit, in ms (2 shared cores make Chromium slow). */
const STEP_TIMEOUT_MS = 60_000;
/** Impacts that fail the axe gate. */
const FAILING_IMPACTS = new Set(['serious', 'critical']);
/** Screenshot widths, in CSS px; the viewport height before the full-page capture, in CSS px. */
const SHOT_WIDTHS = [390, 1280];
const SHOT_HEIGHT = 800;
/** Tries per screenshot: headless Chromium sometimes fails a tall full-page capture ("Unable to
 * capture screenshot") on a loaded machine, and succeeds when asked again. */
const SHOT_ATTEMPTS = 3;

function usage() {
  console.error(
    'usage: browser.cjs axe <site dir> <relpath>... | shots <site dir> <out dir> <kind>=<relpath>...'
  );
  process.exit(2);
}

function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`browser.cjs: ${name} is not set`);
    process.exit(2);
  }
  return v;
}

async function launch() {
  // No GPU on these machines: software compositing from the start.
  const args = ['--disable-gpu'];
  // Chromium refuses to start its sandbox as root (CI runs as root).
  if (typeof process.getuid === 'function' && process.getuid() === 0) args.push('--no-sandbox');
  return chromium.launch({ executablePath: env('REFEREE_CHROMIUM_BIN'), headless: true, args });
}

function pageUrl(site, rel) {
  return pathToFileURL(path.join(site, rel)).href;
}

/** Loads `rel` in a fresh page of `context`; returns the page and the errors it logged. */
async function open(context, site, rel) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  const errors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => errors.push(`uncaught exception: ${err.message}`));
  page.on('requestfailed', (req) =>
    errors.push(`failed to load ${req.url()}: ${req.failure()?.errorText ?? 'unknown'}`)
  );
  await page.goto(pageUrl(site, rel), { waitUntil: 'load', timeout: STEP_TIMEOUT_MS });
  return { page, errors };
}

async function axeGate(site, rels) {
  const axeSource = fs.readFileSync(env('REFEREE_AXE_JS'), 'utf8');
  const browser = await launch();
  let failures = 0;
  let minor = 0;
  try {
    for (const scheme of ['light', 'dark']) {
      const context = await browser.newContext({
        colorScheme: scheme,
        viewport: { width: 1280, height: SHOT_HEIGHT },
      });
      for (const rel of rels) {
        const { page, errors } = await open(context, site, rel);
        // Evaluated through the DevTools protocol: no <script> is added to the page, so its
        // CSP (script-src) neither blocks axe nor is loosened for it.
        await page.evaluate(axeSource);
        // preload: false: axe would fetch the stylesheets again with XHR, which the page's
        // connect-src refuses (a console error that is axe's, not the site's).
        const result = await page.evaluate(() =>
          // eslint-disable-next-line no-undef
          axe.run(document, { resultTypes: ['violations'], preload: false })
        );
        const where = `${rel} [${scheme}]`;
        for (const e of errors) {
          failures += 1;
          console.error(`${where}: ${e}`);
        }
        for (const v of result.violations) {
          if (!FAILING_IMPACTS.has(v.impact)) {
            minor += 1;
            console.log(`${where}: note: ${v.id} (${v.impact}, ${v.nodes.length} nodes): ${v.help}`);
            continue;
          }
          failures += 1;
          console.error(`${where}: ${v.id} (${v.impact}): ${v.help}`);
          console.error(`  ${v.helpUrl}`);
          for (const node of v.nodes) {
            const summary = (node.failureSummary ?? '').split('\n').slice(0, 3).join(' ').trim();
            console.error(`  - ${node.target.join(' ')}`);
            if (summary) console.error(`    ${summary}`);
          }
        }
        const n = result.violations.filter((v) => FAILING_IMPACTS.has(v.impact)).length;
        console.log(`${where}: ${n} serious/critical violations, ${errors.length} console errors`);
        await page.close();
      }
      await context.close();
    }
  } finally {
    await browser.close();
  }
  if (minor > 0) console.log(`axe: ${minor} moderate/minor violations (reported, not failing)`);
  return failures === 0 ? 0 : 1;
}

/** A full-page PNG of `page` at `file`, retried as SHOT_ATTEMPTS says. */
async function screenshot(page, file) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await page.screenshot({ path: file, fullPage: true });
      return;
    } catch (err) {
      if (attempt >= SHOT_ATTEMPTS) throw err;
      console.log(`${path.basename(file)}: capture failed (${err.message.split('\n')[0]}), retrying`);
    }
  }
}

async function shotsGate(site, outDir, specs) {
  const browser = await launch();
  try {
    for (const spec of specs) {
      const eq = spec.indexOf('=');
      if (eq <= 0) usage();
      const kind = spec.slice(0, eq);
      const rel = spec.slice(eq + 1);
      const schemes = kind === 'round' ? ['light', 'dark'] : ['light'];
      for (const scheme of schemes) {
        for (const width of SHOT_WIDTHS) {
          const context = await browser.newContext({
            colorScheme: scheme,
            viewport: { width, height: SHOT_HEIGHT },
          });
          const { page } = await open(context, site, rel);
          const name = `${kind}-${width}${scheme === 'dark' ? '-dark' : ''}.png`;
          await screenshot(page, path.join(outDir, name));
          const size = await page.evaluate(() => [
            document.documentElement.scrollWidth,
            document.documentElement.scrollHeight,
          ]);
          // A page wider than the viewport scrolls sideways: unreadable on a phone.
          const overflow = size[0] > width ? `  (WARNING: ${size[0]} px wide content)` : '';
          console.log(`${name}: ${rel}, ${size[0]}x${size[1]} CSS px${overflow}`);
          await context.close();
        }
      }
    }
  } finally {
    await browser.close();
  }
  return 0;
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === 'axe' && rest.length >= 2) return axeGate(rest[0], rest.slice(1));
  if (mode === 'shots' && rest.length >= 3) return shotsGate(rest[0], rest[1], rest.slice(2));
  return usage();
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`browser.cjs: ${err && err.stack ? err.stack : err}`);
    process.exit(2);
  }
);
