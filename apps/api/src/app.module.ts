import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from './config';
import { FEATURE_MODULES } from './features';
import { HealthController } from './health/health.controller';
import { Metrics } from './health/metrics.service';
import { AuthGuard } from './http/auth.guard';
import { BodyTypeGuard } from './http/body';
import { ErrorFilter } from './http/error.filter';
import { RateLimitGuard } from './http/rate-limit.guard';
import { GrantGuard } from './http/grant.guard';
import { CreditGuard } from './http/credit.guard';
import { SecurityService } from './security/security.service';
import { UsersController } from './security/users.controller';
import { BillingController } from './security/billing.controller';
import { SystemStore } from './system/system-store';
import { TenantsController } from './system/tenants.controller';
import { TokensController } from './system/tokens.controller';
import { Pressure } from './tenancy/pressure';
import { TenantRegistry } from './tenancy/tenant-registry';
import { SchemasModule } from './schemas/schemas.module';
import { RowsModule } from './rows/rows.module';
import { ReplicationModule } from './replication/replication.module';
import { Replication } from './replication/replication.service';
import { ReplicationGuard } from './replication/replication.guard';

/** Providers every feature module can inject: config, tenants, metrics, the system store. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, system: SystemStore): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: APP_CONFIG, useValue: config }, { provide: SystemStore, useValue: system }, Pressure, TenantRegistry, Metrics, Replication, SecurityService],
      exports: [APP_CONFIG, SystemStore, Pressure, TenantRegistry, Metrics, Replication, SecurityService],
    };
  }
}

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, system: SystemStore): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.forRoot(config, system), SchemasModule, RowsModule, ReplicationModule, ...FEATURE_MODULES],
      controllers: [HealthController, TenantsController, TokensController, UsersController, BillingController],
      providers: [
        // Guards run in this order: the rate limit needs the token AuthGuard resolved.
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_GUARD, useClass: CreditGuard },
        { provide: APP_GUARD, useClass: GrantGuard },
        { provide: APP_GUARD, useClass: BodyTypeGuard },
        { provide: APP_FILTER, useClass: ErrorFilter },
        // Replication: the staleness bound, a follower's lag headers, X-DB-Replication: degraded (spec §7.2).
        ...(config.replication ? [{ provide: APP_GUARD, useClass: ReplicationGuard }] : []),
      ],
    };
  }
}
