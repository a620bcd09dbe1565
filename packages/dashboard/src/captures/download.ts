// A file download from data built in the page (a Blob URL: nothing leaves the browser).

/** The text of a JSON export, one spelling for the download and the copy saved to Storage. */
export function exportText(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** Offers `value` as a JSON file (HAR exports). */
export function downloadJson(value: unknown, fileName: string): void {
  const blob = new Blob([exportText(value)], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
