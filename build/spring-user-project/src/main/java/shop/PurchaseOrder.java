package shop;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;

@Entity
public class PurchaseOrder {
    @Id
    private String id;
    private String status;
    private int quantity;

    protected PurchaseOrder() {
    }

    public PurchaseOrder(String id, int quantity) {
        this.id = id;
        this.quantity = quantity;
        this.status = "PLACED";
    }

    public String getId() {
        return id;
    }

    public String getStatus() {
        return status;
    }

    public void setStatus(String status) {
        this.status = status;
    }

    public int getQuantity() {
        return quantity;
    }
}
