// A HAR export saved to Supabase Storage as the signed-in user: bucket `exports`, under their own
// folder (`<uid>/…`, the only one its policies let them write,
// supabase/migrations/20261128121000_create_exports_bucket.sql), with a signed link for an hour.
import type { SupabaseClient } from '@supabase/supabase-js';
import { exportText } from './download.ts';

const BUCKET = 'exports';
const HAR_TYPE = 'application/har+json';
/** How long the link shown after saving works, in seconds. */
const LINK_SECONDS = 3600;

export type SavedExport = { path: string; signedUrl: string | null; linkError: string | null };

/** A file name part from a workspace name: what Storage keys and shells take without quoting. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '') || 'export';
}

/** Uploads `har` (the same text the download gives) to `exports/<uid>/<name>-<timestamp>.har`. */
export async function saveHarExport(
  supabase: SupabaseClient,
  har: unknown,
  name: string,
): Promise<SavedExport> {
  const { data: auth } = await supabase.auth.getSession();
  const uid = auth.session?.user.id;
  if (!uid) throw new Error('Sign in again to save to Storage.');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const path = `${uid}/${safeName(name)}-${stamp}.har`;
  const storage = supabase.storage.from(BUCKET);
  // storage-js sends a Blob as a form part typed by the Blob itself, so the type goes on both.
  const { error } = await storage.upload(path, new Blob([exportText(har)], { type: HAR_TYPE }), {
    contentType: HAR_TYPE,
  });
  if (error) throw new Error(`Storage did not save ${BUCKET}/${path}: ${error.message}`);
  const link = await storage.createSignedUrl(path, LINK_SECONDS);
  return {
    path: `${BUCKET}/${path}`,
    signedUrl: link.data?.signedUrl ?? null,
    linkError: link.error?.message ?? null,
  };
}
