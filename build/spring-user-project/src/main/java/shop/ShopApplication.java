package shop;

import dev.coop.Topic;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

@SpringBootApplication
public class ShopApplication {
    public static final Topic<String> ORDER_PLACED = Topic.of("order-placed", String.class);

    public static void main(String[] args) {
        SpringApplication.run(ShopApplication.class, args);
    }
}
