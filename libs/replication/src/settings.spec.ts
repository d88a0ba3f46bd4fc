import { NO_SYNC_SETTINGS, effectiveSync, mergeSyncSettings, parseSyncSettings, storedSyncSettings } from './settings';

describe('tenant sync settings', () => {
  const node = { sync_followers: 1, sync_ms: 1000, strict: false };

  it('parse a change: absent stays, null goes back to the node default, bad values name the field', () => {
    expect(parseSyncSettings({ strict: true })).toEqual({ strict: true });
    expect(parseSyncSettings({ sync_followers: null, sync_ms: 250 })).toEqual({ sync_followers: null, sync_ms: 250 });
    expect(parseSyncSettings({})).toEqual({});
    for (const [body, field] of [[{ strict: 1 }, 'strict'], [{ sync_ms: 0 }, 'sync_ms'], [{ sync_followers: -1 }, 'sync_followers'], [{ sync_followers: 2.5 }, 'sync_followers'], [{ x: 1 }, 'x']] as const) {
      expect(() => parseSyncSettings(body)).toThrow(expect.objectContaining({ code: 'validation_failed', details: expect.objectContaining({ field }) }));
    }
    expect(() => parseSyncSettings([1])).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    expect(() => parseSyncSettings(null)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('the tenant wins where it set a value; the node elsewhere', () => {
    const stored = mergeSyncSettings(mergeSyncSettings(NO_SYNC_SETTINGS, { strict: true, sync_ms: 50 }), { sync_ms: null });
    expect(stored).toEqual({ sync_followers: null, sync_ms: null, strict: true });
    expect(effectiveSync(node, stored)).toEqual({ sync_followers: 1, sync_ms: 1000, strict: true });
    expect(effectiveSync(node, { sync_followers: 0, sync_ms: null, strict: null })).toEqual({ sync_followers: 0, sync_ms: 1000, strict: false });
  });

  it('read a stored record defensively (a malformed field reads as unset)', () => {
    expect(storedSyncSettings({ sync_followers: 2, sync_ms: 300, strict: false })).toEqual({ sync_followers: 2, sync_ms: 300, strict: false });
    expect(storedSyncSettings({ sync_followers: 'x', sync_ms: 0, strict: 'no' })).toEqual(NO_SYNC_SETTINGS);
    expect(storedSyncSettings(null)).toEqual(NO_SYNC_SETTINGS);
  });
});
