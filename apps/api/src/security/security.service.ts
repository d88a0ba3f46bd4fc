import { Injectable } from '@nestjs/common';
import { SetMetadata } from '@nestjs/common';
import type { TenantStore } from '../tenancy/store-port';
import type { TenantHandle } from '../tenancy/tenant-registry';
import { Acting, OWNER, SecurityCatalog, type Privilege } from './catalog';

export const REQUIRES = 'mmdb:requires';

/** What a route needs of the acting user: privileges on the schema named by a path parameter. */
export interface Requirement {
  readonly privileges: readonly Privilege[];
  readonly param: string;
}

/** The route needs these privileges on the schema in path parameter `param` (403 `forbidden` without). */
export const Requires = (param: string, ...privileges: Privilege[]) => SetMetadata(REQUIRES, { privileges, param } satisfies Requirement);

/** Each open tenant store's users and policies (loaded once, kept current from its frames). */
@Injectable()
export class SecurityService {
  private readonly catalogs = new WeakMap<TenantStore, Promise<SecurityCatalog>>();
  private readonly ready = new WeakMap<TenantStore, SecurityCatalog>();

  catalog(t: TenantHandle): SecurityCatalog | Promise<SecurityCatalog> {
    const done = this.ready.get(t.store);
    if (done) return done;
    let p = this.catalogs.get(t.store);
    if (!p) {
      p = SecurityCatalog.load(t.store).then((c) => {
        this.ready.set(t.store, c);
        return c;
      });
      this.catalogs.set(t.store, p);
    }
    return p;
  }

  /** The acting user of a token's user name (`owner` for the operator and for tokens without one). */
  acting(catalog: SecurityCatalog, user: string): Acting {
    return new Acting(user, user === OWNER ? null : catalog.user(user) ?? null, catalog);
  }
}
