package dev.coop.spring.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A row of the test ledger, written by JPA and by JDBC alike. */
@Entity
@Table(name = "ledger")
public class Entry {
    @Id
    private String id;
    private int amount;

    protected Entry() {
    }

    public Entry(String id, int amount) {
        this.id = id;
        this.amount = amount;
    }

    public String getId() {
        return id;
    }

    public int getAmount() {
        return amount;
    }

    public void setAmount(int amount) {
        this.amount = amount;
    }
}
