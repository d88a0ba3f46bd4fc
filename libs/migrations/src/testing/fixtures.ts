/** Test fixtures shared by the specs (not part of the built lib). */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { TenantStore } from '@mmdb/storage';

/** `app.users`: id, email (unique index `by_email`), age. */
export const USERS = `namespace = "app"
table = "users"
primary_key = ["id"]
[[columns]]
name = "id"
ty = "i64"
required = true
[[columns]]
name = "email"
ty = "str"
[[columns]]
name = "age"
ty = "i64"
[[indexes]]
name = "by_email"
columns = ["email"]
unique = true
`;

/** A follower store that applied every frame of `store`'s log through the applier, handed to `check`, then removed. */
export async function onFollower(store: TenantStore, check: (follower: TenantStore) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-follower-'));
  const follower = await TenantStore.open({ dir, sync: false });
  try {
    const bytes: Buffer[] = [];
    for await (const e of store.logFrames()) bytes.push(e.bytes);
    await follower.applyFrames(bytes);
    await check(follower);
  } finally {
    await follower.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
