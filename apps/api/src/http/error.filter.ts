import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DbError, ERROR_CATALOGUE, ErrorCode, newUlid } from '@mmdb/core';

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  request_id: string;
  retry: boolean;
  [detail: string]: unknown;
}

const HTTP_TO_CODE: Record<number, ErrorCode> = {
  400: 'invalid_body',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  412: 'precondition_failed',
  413: 'payload_too_large',
  415: 'invalid_body',
  429: 'rate_limited',
  503: 'service_unavailable',
};

/** Turns anything thrown into `{ code, message, details }` (the one mapping of the HTTP edge). */
export function classify(e: unknown): { code: ErrorCode; message: string; details: Record<string, unknown> } {
  if (e instanceof DbError) return { code: e.code, message: e.message, details: { ...e.details } };
  if ((e as NodeJS.ErrnoException)?.code === 'ENOSPC') return { code: 'service_unavailable', message: 'the disk is full: writes are refused', details: { pressure: 'disk_full' } };
  if (e instanceof HttpException) {
    const status = e.getStatus();
    const code = HTTP_TO_CODE[status];
    if (code) {
      let message = e.message;
      if (status === 404) message = `no such route: ${message.replace(/^Cannot /, '')}`;
      if (status === 413) message = 'request body is over the 8 MiB cap';
      if (status === 415) message = `Content-Type does not match the body: ${message}`;
      return { code, message, details: {} };
    }
  }
  return { code: 'internal_error', message: 'internal error', details: {} };
}

/** The one shape of an error answer: `{...details, error, message, request_id, retry}`. */
export function errorBody(code: ErrorCode, message: string, requestId: string, details: Record<string, unknown> = {}): ErrorBody {
  return { ...details, error: code, message, request_id: requestId, retry: ERROR_CATALOGUE[code].retry };
}

/** Every non-2xx answer: `{error, message, request_id, retry, ...details}`; a 500 also gets X-DB-Trace-Id and a log line. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly log = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const reply = ctx.getResponse<FastifyReply>();
    const req = ctx.getRequest<FastifyRequest>();
    const { code, message, details } = classify(exception);
    const spec = ERROR_CATALOGUE[code];
    const body = errorBody(code, message, String(req.id), details);
    if (spec.status >= 500 && code !== 'service_unavailable' && code !== 'gateway_timeout') {
      const trace = newUlid();
      reply.header('x-db-trace-id', trace);
      this.log.error(
        `trace=${trace} request=${req.id} ${req.method} ${req.url}: ${(exception as Error)?.stack ?? String(exception)}`,
      );
    }
    if (reply.sent || reply.raw.headersSent) return;
    if (code === 'rate_limited' && typeof details.retry_after === 'number') reply.header('retry-after', String(details.retry_after));
    reply.status(spec.status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
