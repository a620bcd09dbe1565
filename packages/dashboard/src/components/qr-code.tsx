// A QR code as SVG squares (qrcode-generator computes the modules). Drawn with React elements,
// not an HTML string, so nothing is injected and the CSP needs no exception.
import qrcode from 'qrcode-generator';

export function QrCode(props: { text: string; label: string }) {
  // Type 0 picks the smallest version that fits; M corrects ~15 % damage (a phone camera on a
  // screen needs little more).
  const qr = qrcode(0, 'M');
  qr.addData(props.text);
  qr.make();
  const size = qr.getModuleCount();
  const quiet = 2;
  const squares: string[] = [];
  for (let row = 0; row < size; row += 1) {
    for (let column = 0; column < size; column += 1) {
      if (qr.isDark(row, column)) squares.push(`M${column + quiet} ${row + quiet}h1v1h-1z`);
    }
  }
  return (
    <div className="qr" data-testid="qr-code" data-text={props.text}>
      <svg
        viewBox={`0 0 ${size + quiet * 2} ${size + quiet * 2}`}
        role="img"
        aria-label={props.label}
      >
        <path className="qr__dark" d={squares.join('')} />
      </svg>
    </div>
  );
}
