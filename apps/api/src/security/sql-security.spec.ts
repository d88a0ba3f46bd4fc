import { securityStatements } from './sql-security';

describe('securityStatements', () => {
  it('finds the security statements of a script in any letter case, and leaves other SQL to the engine', () => {
    expect(securityStatements("grant read on app.t to bob; Create Role alice")?.length).toBe(2);
    expect(securityStatements('DROP POLICY IF EXISTS p1 ON app.t')?.length).toBe(1);
    expect(securityStatements("SELECT r.id FROM rrf((SELECT id FROM app.t ORDER BY emb <-> $1 LIMIT 20), (SELECT id FROM fts_search('app.t', 'body', $2, 20, 'bm25')), 'id') f JOIN app.t r ON r.id = f.id")).toBeNull();
    // a word of a security statement elsewhere (a column, a string) is still plain SQL
    expect(securityStatements("SELECT user_id, 'grant' AS role FROM app.users")).toBeNull();
    expect(() => securityStatements('GRANT read ON app.t TO bob; SELECT 1')).toThrow(/may not mix/);
  });
});
