import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, AppConfig } from './config';
import { FEATURE_MODULES } from './features';
import { HealthController } from './health/health.controller';
import { Metrics } from './health/metrics.service';
import { ErrorFilter } from './http/error.filter';
import { globalGuards } from './http/guards';
import { DirectRoutes } from './http/direct-route';
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

/** Providers every feature module can inject: config, tenants, metrics, the system store. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, system: SystemStore): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: APP_CONFIG, useValue: config }, { provide: SystemStore, useValue: system }, Pressure, TenantRegistry, Metrics, Replication, SecurityService, DirectRoutes],
      exports: [APP_CONFIG, SystemStore, Pressure, TenantRegistry, Metrics, Replication, SecurityService, DirectRoutes],
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
        // The global guards run in the order of http/guards.ts (the rate limit needs the token
        // AuthGuard resolved). Each is a provider of its own and the APP_GUARD of that instance,
        // so the direct routes (http/direct-route.ts) run the very instances Nest runs.
        ...globalGuards(config).flatMap((g) => [g, { provide: APP_GUARD, useExisting: g }]),
        ErrorFilter,
        { provide: APP_FILTER, useExisting: ErrorFilter },
      ],
    };
  }
}
