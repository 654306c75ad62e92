/** Headless Chromium (Debian's `chromium`) driven by playwright-core, and axe-core's check of a page. */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export async function launchChromium(): Promise<Browser> {
  try {
    return await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
  } catch (error) {
    throw new Error(
      `this test needs Debian's chromium (apt-get install chromium): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

export interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.1 A and AA rules, and best practices). */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: any[] }> } }).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n: any) => String(n.target)) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
