/**
 * Elasticsearch error bodies: `{error: {root_cause: [...], type, reason, ...}, status}`.
 * Every refusal of the ES surface is an `EsError`; the controller serializes `body()`.
 */
export class EsError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly reason: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(reason);
  }

  /** The error object (without `status`), also used for bulk items. */
  errorObject(): Record<string, unknown> {
    const own = { type: this.type, reason: this.reason, ...this.extra };
    const root = (this.extra.caused_by as Record<string, unknown> | undefined) ?? own;
    return { root_cause: [root], ...own };
  }

  /** The full body of a failed request. */
  body(): Record<string, unknown> {
    return { error: this.errorObject(), status: this.status };
  }

  /** A bulk/mget item error (no root_cause). */
  item(): Record<string, unknown> {
    return { type: this.type, reason: this.reason, ...this.extra };
  }
}

const idx = (index: string) => ({ 'resource.type': 'index_or_alias', 'resource.id': index, index_uuid: '_na_', index });

export const indexNotFound = (index: string) => new EsError(404, 'index_not_found_exception', `no such index [${index}]`, idx(index));
export const alreadyExists = (index: string, uuid: string) =>
  new EsError(400, 'resource_already_exists_exception', `index [${index}/${uuid}] already exists`, { index_uuid: uuid, index });
export const illegalArgument = (reason: string) => new EsError(400, 'illegal_argument_exception', reason);
export const parsingError = (reason: string, extra: Record<string, unknown> = {}) => new EsError(400, 'parsing_exception', reason, { line: 1, col: 1, ...extra });
export const mapperParsing = (reason: string) => new EsError(400, 'mapper_parsing_exception', reason);
export const validation = (reasons: string[]) =>
  new EsError(400, 'action_request_validation_exception', `Validation Failed: ${reasons.map((r, i) => `${i + 1}: ${r};`).join('')}`);
export const versionConflict = (id: string, reason: string, index: string, uuid: string) =>
  new EsError(409, 'version_conflict_engine_exception', `[${id}]: version conflict, ${reason}`, { index_uuid: uuid, shard: '0', index });
export const documentMissing = (id: string, index: string, uuid: string) =>
  new EsError(404, 'document_missing_exception', `[_doc][${id}]: document missing`, { index_uuid: uuid, shard: '0', index });
export const searchPhase = (cause: EsError) =>
  new EsError(cause.status, 'search_phase_execution_exception', 'all shards failed', {
    phase: 'query', grouped: true,
    failed_shards: [{ shard: 0, index: null, node: 'mmdb', reason: cause.item() }],
    caused_by: cause.item(),
  });
