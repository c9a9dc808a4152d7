// Writes ONNX Runtime's outputs for a test model directory: reads
// DIR/model.onnx and DIR/input_NAME.npy for each of its inputs, runs it on
// the CPU provider with graph optimizations off (each node runs as
// written, contrib operators included), and writes DIR/output_NAME.npy.
// ONNX Runtime comes from npm (onnxruntime-node, installed with
// --ignore-scripts: the CPU library ships in the package).
// usage: ORT_NODE=.../node_modules/onnxruntime-node node ort_reference.js DIR...
const ort = require(process.env.ORT_NODE || 'onnxruntime-node');
const fs = require('fs');
const path = require('path');

const kinds = {
  '<f4': ['float32', Float32Array], '<f2': ['float16', Uint16Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array],
  '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array],
};

function readNpy(p) {
  const b = fs.readFileSync(p);
  const hlen = b.readUInt16LE(8);
  const h = b.slice(10, 10 + hlen).toString('latin1');
  const shape = h.match(/'shape': \(([^)]*)\)/)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const descr = h.match(/'descr': '([^']*)'/)[1];
  if (!kinds[descr]) throw new Error(`${p}: unsupported dtype ${descr}`);
  const [type, Array] = kinds[descr];
  const bytes = b.buffer.slice(b.byteOffset + 10 + hlen, b.byteOffset + b.length);
  return new ort.Tensor(type, new Array(bytes), shape);
}

function writeNpy(p, t) {
  const descr = Object.keys(kinds).find(k => kinds[k][0] === t.type);
  if (!descr) throw new Error(`${p}: unsupported output type ${t.type}`);
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${t.dims.join(', ')}${t.dims.length == 1 ? ',' : ''}), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head.writeUInt16LE(h.length, 8);
  const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(p, Buffer.concat([head, Buffer.from(h, 'latin1'), data]));
}

(async () => {
  for (const dir of process.argv.slice(2)) {
    const s = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
                                                {graphOptimizationLevel: 'disabled', intraOpNumThreads: 1});
    const feeds = {};
    for (const name of s.inputNames) feeds[name] = readNpy(path.join(dir, `input_${name}.npy`));
    const r = await s.run(feeds);
    for (const name of s.outputNames) writeNpy(path.join(dir, `output_${name}.npy`), r[name]);
    console.log(`${dir}: ${s.outputNames.length} outputs`);
  }
})().catch(e => { console.error(e); process.exit(1); });
