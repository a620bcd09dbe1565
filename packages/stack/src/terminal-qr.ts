// A QR code drawn with text for the start-up banner (docs/devices.md), as Expo's CLI prints its LAN
// URL: qrcode-generator computes the modules; each character shows two rows with the half blocks.
// Light modules are drawn and dark ones left blank, so on the usual dark terminal the code reads
// dark on light, as cameras expect; a quiet zone of two modules surrounds it.
import qrcode from 'qrcode-generator';

const QUIET_ZONE = 2;

/** Characters for a pair of rows, indexed by (top light ? 2 : 0) + (bottom light ? 1 : 0). */
const HALF_BLOCKS = [' ', '▄', '▀', '█'];

export function terminalQr(text: string): string {
  // M corrects about 15 % damage: plenty for a screen, and keeps the code small.
  const qr = qrcode(0, 'M');
  qr.addData(text);
  qr.make();
  const size = qr.getModuleCount();
  const light = (row: number, column: number) => {
    const r = row - QUIET_ZONE;
    const c = column - QUIET_ZONE;
    return r < 0 || c < 0 || r >= size || c >= size || !qr.isDark(r, c);
  };
  const width = size + QUIET_ZONE * 2;
  const lines: string[] = [];
  for (let row = 0; row < width; row += 2) {
    let line = '';
    for (let column = 0; column < width; column += 1) {
      const bottom = row + 1 < width ? light(row + 1, column) : false;
      line += HALF_BLOCKS[(light(row, column) ? 2 : 0) + (bottom ? 1 : 0)];
    }
    lines.push(line);
  }
  return lines.join('\n');
}
