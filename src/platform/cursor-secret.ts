/** Where the cursor secret comes from: configuration, or (SQLite only) the database itself. */
import { randomBytes } from "node:crypto";
import type { Config } from "./config.js";
import type { Storage } from "../storage/database.js";
import { putSettingOnce } from "../storage/settings.repository.js";
import { CursorCodec } from "./cursor.js";

export async function cursorCodecFor(config: Config, storage: Storage): Promise<CursorCodec> {
  if (config.cursorSecret !== undefined) return new CursorCodec(config.cursorSecret);
  // Kept with the embedded database, so cursors stay valid across restarts.
  const secret = await putSettingOnce(storage.db, "cursor_secret", randomBytes(32).toString("base64url"));
  return new CursorCodec(secret);
}
