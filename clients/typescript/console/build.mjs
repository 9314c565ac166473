// Bundles the memory console (esbuild) into the server's package, where the
// web port serves it at /console/ (server/mnemo_server/web/console.py).
//
//   node console/build.mjs           write the bundle (make console)
//   node console/build.mjs --check   exit 1 if the committed bundle is not what this source builds
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const HERE = dirname(fileURLToPath(import.meta.url));
export const OUT_DIR = resolve(HERE, "../../../server/mnemo_server/web/console_assets");

/** The bundle's files: name -> contents. */
export async function buildConsole() {
  const result = await esbuild.build({
    entryPoints: [join(HERE, "src/main.tsx")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "eof",
    write: false,
    outfile: "console.js",
    logLevel: "warning",
  });
  const [script] = result.outputFiles;
  return {
    "console.js": script.contents,
    "index.html": await readFile(join(HERE, "index.html")),
    "console.css": await readFile(join(HERE, "console.css")),
  };
}

async function main() {
  const files = await buildConsole();
  const check = process.argv.includes("--check");
  const stale = [];
  for (const [name, contents] of Object.entries(files)) {
    const path = join(OUT_DIR, name);
    if (check) {
      const committed = await readFile(path).catch(() => Buffer.alloc(0));
      if (!Buffer.from(contents).equals(committed)) stale.push(name);
    } else {
      await writeFile(path, contents);
      console.log(`${path}: ${contents.length} bytes`);
    }
  }
  if (stale.length > 0) {
    console.error(`stale console bundle (${stale.join(", ")}): run make console`);
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
