package shop;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import jakarta.persistence.EntityManager;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

@Service
public class OrderService {
    private final PurchaseOrderRepository orders;
    private final EntityManager em;
    private final CoopClient coop;

    OrderService(PurchaseOrderRepository orders, EntityManager em, CoopClient coop) {
        this.orders = orders;
        this.em = em;
        this.coop = coop;
    }

    /** The outbox: the order and its message commit together. */
    @Transactional
    public MessageId place(String id, int quantity) {
        orders.save(new PurchaseOrder(id, quantity));
        return coop.launch(ShopApplication.ORDER_PLACED, id);
    }

    /** Called from a step: joins the step's transaction. */
    @Transactional
    public void mark(String id, String status) {
        em.find(PurchaseOrder.class, id).setStatus(status);
    }
}
