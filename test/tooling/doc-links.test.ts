// The README and docs/ link to each other by task: every relative link
// names a file that exists and, with a #fragment, a heading of that file
// (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((n) => n.endsWith(".md")).map((n) => `docs/${n}`)];

/** The page without its fenced blocks (a link-like text in an example is not a link). */
function prose(markdown: string): string {
  return markdown.replace(/^\s*(`{3,}|~{3,})[\s\S]*?^\s*\1\s*$/gm, "");
}

function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(readFileSync(file, "utf8")).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = anchorOf(match[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

describe("links between the README and docs/", () => {
  it("reach a file that exists and a heading it has", () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const file = join(ROOT, page);
      for (const match of prose(readFileSync(file, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/i.test(target)) continue;
        const [path, fragment] = target.split("#") as [string, string | undefined];
        const targetFile = path === "" ? file : resolve(dirname(file), path);
        if (!existsSync(targetFile)) broken.push(`${page}: ${target} (no ${relative(ROOT, targetFile)})`);
        else if (fragment !== undefined && targetFile.endsWith(".md") && !anchorsOf(targetFile).has(fragment)) broken.push(`${page}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("turns a heading into GitHub's anchor", () => {
    expect(anchorOf("`ORIGIN_URL` and other origins")).toBe("origin_url-and-other-origins");
    expect(anchorOf("Before deploying: the bundle and a dry run")).toBe("before-deploying-the-bundle-and-a-dry-run");
  });
});
