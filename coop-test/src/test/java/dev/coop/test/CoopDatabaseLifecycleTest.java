package dev.coop.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtensionContext;

/** Drives the extension's callbacks by hand, as JUnit would, to watch what happens between them. */
class CoopDatabaseLifecycleTest {

    private final CoopPostgres server = CoopPostgres.shared();

    @Test
    void using_the_database_before_before_all_fails_with_a_clear_message() {
        CoopDatabase db = new CoopDatabase();

        assertThatThrownBy(db::dataSource).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CoopDatabase.dataSource() has no database")
                .hasMessageContaining("static field");
        assertThatThrownBy(db::jdbcUrl).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(db::databaseName).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> db.newDataSource(1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void after_all_closes_every_pool_then_drops_the_database() throws Exception {
        CoopDatabase db = new CoopDatabase(2);
        ExtensionContext testClass = context("[class:Orders]", null, Orders.class, null);

        db.beforeAll(testClass);
        String name = db.databaseName();
        HikariDataSource shared = (HikariDataSource) db.dataSource();
        HikariDataSource engine = db.newDataSource(1);
        Sql.execute(shared, "SELECT 1");
        Sql.execute(engine, "SELECT 1");
        db.afterAll(testClass);

        assertThat(name).startsWith("orders_");
        assertThat(shared.isClosed()).isTrue();
        assertThat(engine.isClosed()).isTrue();
        assertThat(Sql.databaseExists(server, name)).isFalse();
        assertThatThrownBy(db::dataSource).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void a_nested_class_shares_the_database_of_its_enclosing_class() throws Exception {
        CoopDatabase db = new CoopDatabase(1);
        ExtensionContext outer = context("[class:Orders]", null, Orders.class, null);
        ExtensionContext nested = context("[class:Orders]/[nested:Inner]", outer, Orders.Inner.class, null);

        db.beforeAll(outer);
        String name = db.databaseName();
        db.beforeAll(nested);
        assertThat(db.databaseName()).isEqualTo(name);
        db.afterAll(nested);
        assertThat(Sql.databaseExists(server, name)).isTrue();
        db.afterAll(outer);

        assertThat(Sql.databaseExists(server, name)).isFalse();
    }

    @Test
    void in_an_instance_field_each_test_method_gets_its_own_database() throws Exception {
        CoopDatabase db = new CoopDatabase(1);
        Method method = Orders.class.getDeclaredMethod("places_an_order");
        ExtensionContext testClass = context("[class:Orders]", null, Orders.class, null);
        ExtensionContext test = context("[class:Orders]/[method:places_an_order()]", testClass, Orders.class,
                method);

        db.beforeEach(test);
        String name = db.databaseName();
        Sql.execute(db.dataSource(), "SELECT 1");
        db.afterEach(test);

        assertThat(name).startsWith("orders_places_an_order_");
        assertThat(Sql.databaseExists(server, name)).isFalse();
    }

    @Test
    void one_instance_cannot_serve_two_classes_at_once() {
        CoopDatabase db = new CoopDatabase(1);
        ExtensionContext orders = context("[class:Orders]", null, Orders.class, null);
        ExtensionContext other = context("[class:Other]", null, Object.class, null);

        db.beforeAll(orders);
        try {
            assertThatThrownBy(() -> db.beforeAll(other)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("concurrently");
        } finally {
            db.afterAll(orders);
        }
    }

    @Test
    void a_non_positive_pool_size_is_rejected() {
        assertThatThrownBy(() -> new CoopDatabase(0)).isInstanceOf(IllegalArgumentException.class);
    }

    private static ExtensionContext context(String uniqueId, ExtensionContext parent, Class<?> testClass,
            Method testMethod) {
        return (ExtensionContext) Proxy.newProxyInstance(ExtensionContext.class.getClassLoader(),
                new Class<?>[]{ExtensionContext.class}, (proxy, invoked, args) -> switch (invoked.getName()) {
                    case "getUniqueId" -> uniqueId;
                    case "getDisplayName", "toString" -> uniqueId;
                    case "getParent" -> Optional.ofNullable(parent);
                    case "getTestClass" -> Optional.of(testClass);
                    case "getRequiredTestClass" -> testClass;
                    case "getTestMethod" -> Optional.ofNullable(testMethod);
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new UnsupportedOperationException(invoked.getName());
                });
    }

    static final class Orders {

        void places_an_order() {
        }

        static final class Inner {
        }
    }
}
