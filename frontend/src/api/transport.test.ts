import { describe, expect, it } from 'vitest';
import { ApiError, missing, requestURL, retryable, toApiError, withRetry } from './transport';

describe('requestURL', () => {
  it('fills path parameters escaped and leaves empty query values out', () => {
    expect(requestURL({ route: 'GET /api/sessions/{id}/transcript', params: { id: 'a/b c' } })).toEqual({
      method: 'GET',
      url: '/api/sessions/a%2Fb%20c/transcript',
    });
    expect(requestURL({ route: 'GET /api/sessions', query: { archived: false, source: '', limit: 80, cursor: undefined, profile: 'work' } }).url).toBe(
      '/api/sessions?limit=80&profile=work',
    );
  });

  it('refuses a missing path parameter', () => {
    expect(() => requestURL({ route: 'GET /api/sessions/{id}' })).toThrow('no value for {id}');
  });
});

describe('errors', () => {
  it('normalises every shape a failure comes in', () => {
    expect(toApiError('{"code":"invalid","message":"bad id"}')).toMatchObject({ code: 'invalid', message: 'bad id' });
    expect(toApiError({ code: 'not_found', message: 'no session x' })).toMatchObject({ code: 'not_found' });
    expect(toApiError(new TypeError('Failed to fetch')).code).toBe('network');
    expect(toApiError('plain')).toMatchObject({ code: 'internal', message: 'plain' });
  });

  it('retries only what may succeed with the same request id', () => {
    expect(retryable(new ApiError('network', 'x'))).toBe(true);
    expect(retryable(new ApiError('invalid', 'x', 400))).toBe(false);
    expect(retryable(new ApiError('conflict', 'x', 409))).toBe(false);
    expect(missing(new ApiError('not_found', 'no API route GET /api/x'))).toBe(true);
    expect(missing(new ApiError('not_found', 'no session x'))).toBe(false);
  });

  it('withRetry gives up on a definite refusal at once and retries a transient one', async () => {
    let n = 0;
    await expect(
      withRetry(async () => {
        n++;
        throw new ApiError('invalid', 'bad');
      }, undefined, [0, 0]),
    ).rejects.toThrow('bad');
    expect(n).toBe(1);
    n = 0;
    const v = await withRetry(async () => {
      if (++n < 3) throw new ApiError('network', 'down');
      return 'ok';
    }, undefined, [0, 0]);
    expect([v, n]).toEqual(['ok', 3]);
  });
});
