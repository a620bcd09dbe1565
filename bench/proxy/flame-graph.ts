// A flame graph (SVG) and a self-time summary from a V8 CPU profile (`node --cpu-prof`), so the
// proxy's profile can sit in the docs as a picture and a table. Widths are samples:
// every frame's box spans the samples taken in it and below it; the idle and program roots are
// left out, so the width is the CPU the process spent. Run on its own:
//   node bench/proxy/flame-graph.ts <profile.cpuprofile> <out.svg> [title]
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
}

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WIDTH = 1200;
const ROW = 17;
/** Frames narrower than this share of the width are left out of the picture (not the totals). */
const MIN_SHARE = 0.002;

/** Where a frame's code lives: the part of the system it belongs to. */
export function frameArea(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith('(') ? frame.functionName : 'native';
  if (url.includes('/proxy/src/capture/')) return 'capture';
  if (url.includes('/proxy/src/')) return 'proxy';
  if (url.includes('node_modules/pg')) return 'pg driver';
  if (url.includes('node_modules/')) return 'dependencies';
  if (url.startsWith('node:')) return 'node';
  return 'other';
}

const COLOURS: Record<string, string> = {
  capture: '#e8a33d',
  proxy: '#e0603a',
  'pg driver': '#5fae5f',
  dependencies: '#8cc08c',
  node: '#6b9bd1',
  native: '#9ab0c8',
  '(garbage collector)': '#b0b0b0',
  other: '#c9a0dc',
};

export function frameLabel(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return name;
  const path = frame.url.startsWith('file://')
    ? relative(REPO_ROOT, fileURLToPath(frame.url))
    : frame.url;
  return `${name} ${path}:${frame.lineNumber + 1}`;
}

interface Tree {
  byId: Map<number, ProfileNode>;
  total: Map<number, number>;
  roots: number[];
}

function buildTree(profile: CpuProfile): Tree {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const total = new Map<number, number>();
  const sum = (id: number): number => {
    const node = byId.get(id) as ProfileNode;
    let samples = node.hitCount ?? 0;
    for (const child of node.children ?? []) samples += sum(child);
    total.set(id, samples);
    return samples;
  };
  const root = profile.nodes[0] as ProfileNode;
  sum(root.id);
  // The root's children, without the time the process sat idle or outside JavaScript.
  const roots = (root.children ?? []).filter((id) => {
    const name = byId.get(id)?.callFrame.functionName;
    return name !== '(idle)' && name !== '(program)';
  });
  return { byId, total, roots };
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The flame graph: roots at the bottom, callees above their callers. */
export function renderFlameGraph(profile: CpuProfile, title: string): string {
  const tree = buildTree(profile);
  const busy = tree.roots.reduce((sum, id) => sum + (tree.total.get(id) ?? 0), 0);
  const boxes: Array<{ x: number; depth: number; width: number; node: ProfileNode }> = [];
  let maxDepth = 0;
  const place = (id: number, x: number, depth: number) => {
    const width = ((tree.total.get(id) ?? 0) / busy) * WIDTH;
    if (width < WIDTH * MIN_SHARE) return;
    const node = tree.byId.get(id) as ProfileNode;
    boxes.push({ x, depth, width, node });
    maxDepth = Math.max(maxDepth, depth);
    let childX = x;
    for (const child of node.children ?? []) {
      place(child, childX, depth + 1);
      childX += ((tree.total.get(child) ?? 0) / busy) * WIDTH;
    }
  };
  let x = 0;
  for (const id of tree.roots) {
    place(id, x, 0);
    x += ((tree.total.get(id) ?? 0) / busy) * WIDTH;
  }
  const height = (maxDepth + 1) * ROW + 40;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${height}" font-family="monospace" font-size="11">`,
    `<title>${escapeXml(`Flame graph: ${title}`)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#fdfdf8"/>`,
    `<text x="4" y="16" font-size="13">${escapeXml(title)} (${busy} samples; hover a box for its share)</text>`,
  ];
  for (const box of boxes) {
    const y = height - (box.depth + 1) * ROW;
    const label = frameLabel(box.node.callFrame);
    const share = (((tree.total.get(box.node.id) ?? 0) / busy) * 100).toFixed(1);
    const colour = COLOURS[frameArea(box.node.callFrame)] ?? COLOURS.other;
    const fits = Math.floor((box.width - 4) / 6.6);
    const text = fits >= 3 ? (label.length > fits ? `${label.slice(0, fits - 1)}…` : label) : '';
    parts.push(
      `<g><title>${escapeXml(`${label} — ${share}%`)}</title>` +
        `<rect x="${box.x.toFixed(1)}" y="${y}" width="${box.width.toFixed(1)}" height="${ROW - 1}" fill="${colour}" rx="1"/>` +
        (text
          ? `<text x="${(box.x + 2).toFixed(1)}" y="${y + 12}">${escapeXml(text)}</text>`
          : '') +
        '</g>',
    );
  }
  parts.push('</svg>');
  return parts.join('\n');
}

/** Self time (samples where the frame itself ran) by area and by frame, largest first. */
export function summarizeSelfTime(profile: CpuProfile, topFrames = 15) {
  const tree = buildTree(profile);
  const busyIds = new Set<number>();
  const mark = (id: number) => {
    busyIds.add(id);
    for (const child of tree.byId.get(id)?.children ?? []) mark(child);
  };
  for (const id of tree.roots) mark(id);
  const byArea = new Map<string, number>();
  const byFrame = new Map<string, number>();
  let busy = 0;
  for (const id of busyIds) {
    const node = tree.byId.get(id) as ProfileNode;
    const self = node.hitCount ?? 0;
    if (self === 0) continue;
    busy += self;
    const area = frameArea(node.callFrame);
    byArea.set(area, (byArea.get(area) ?? 0) + self);
    const label = frameLabel(node.callFrame);
    byFrame.set(label, (byFrame.get(label) ?? 0) + self);
  }
  const share = (samples: number) => (samples / busy) * 100;
  const sorted = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .map(([name, samples]) => ({ name, percent: share(samples) }));
  return { samples: busy, areas: sorted(byArea), frames: sorted(byFrame).slice(0, topFrames) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [input, output, title = 'CPU profile'] = process.argv.slice(2);
  if (!input || !output) {
    console.error('usage: node bench/proxy/flame-graph.ts <profile.cpuprofile> <out.svg> [title]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(input, 'utf8')) as CpuProfile;
  writeFileSync(output, renderFlameGraph(profile, title));
  console.log(JSON.stringify(summarizeSelfTime(profile), null, 2));
}
