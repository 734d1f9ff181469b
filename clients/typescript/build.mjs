// Builds dist/ with tsc. npm runs it (`prepare`) when it installs the package from a
// checkout (`npm install ./clients/typescript`), which links the folder without its dev
// dependencies: they are installed here first, from the lockfile, when absent.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const run = (command, args) => execFileSync(command, args, { cwd: here, stdio: "inherit" });

if (!existsSync(new URL("node_modules/typescript/package.json", import.meta.url))) {
  run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]);
}
run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "."]);
