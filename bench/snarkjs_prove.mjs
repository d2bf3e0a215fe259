// snarkjs's prove step timed in-process: node, snarkjs and its curve are loaded once, the zkey,
// witness and wasm are read into memory once, then each repeat times `groth16.prove` (and the
// witness calculation separately). Usage: node bench/snarkjs_prove.mjs ZKEY WASM INPUT.json REPEAT
// Prints one JSON line: {"prove_ms": [...], "witness_ms": [...], "warmup_ms": n}.
import fs from "fs";
import * as snarkjs from "snarkjs";

const [zkeyPath, wasmPath, inputPath, repeatArg] = process.argv.slice(2);
const repeat = parseInt(repeatArg || "3", 10);
const zkey = new Uint8Array(fs.readFileSync(zkeyPath));
const wasm = new Uint8Array(fs.readFileSync(wasmPath));
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));
const mem = (data) => ({ type: "mem", data });

async function witness() {
    const out = { type: "mem" };
    await snarkjs.wtns.calculate(input, mem(wasm), out);
    return out.data;
}

const t0 = performance.now();
const wtns = await witness();
await snarkjs.groth16.prove(mem(zkey), mem(wtns));  // warm-up: builds the curve, starts its workers
const warmup = performance.now() - t0;
const proveMs = [], witnessMs = [];
for (let i = 0; i < repeat; i++) {
    let t = performance.now();
    const w = await witness();
    witnessMs.push(performance.now() - t);
    t = performance.now();
    await snarkjs.groth16.prove(mem(zkey), mem(w));
    proveMs.push(performance.now() - t);
}
console.log(JSON.stringify({ prove_ms: proveMs, witness_ms: witnessMs, warmup_ms: warmup }));
process.exit(0);  // the curve's worker threads would keep node alive
