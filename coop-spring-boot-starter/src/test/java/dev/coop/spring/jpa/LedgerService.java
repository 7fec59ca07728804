package dev.coop.spring.jpa;

import dev.coop.CoopClient;
import dev.coop.MessageId;
import java.util.Optional;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/** @Transactional methods of each propagation a step may call; also the outbox: a launch with a JPA write. */
@Service
public class LedgerService {
    private final EntryRepository entries;
    private final CoopClient coop;

    LedgerService(EntryRepository entries, CoopClient coop) {
        this.entries = entries;
        this.coop = coop;
    }

    @Transactional
    public void add(String id, int amount) {
        entries.save(new Entry(id, amount));
    }

    @Transactional(propagation = Propagation.MANDATORY)
    public void addMandatory(String id, int amount) {
        entries.save(new Entry(id, amount));
    }

    @Transactional(propagation = Propagation.SUPPORTS)
    public Optional<Entry> find(String id) {
        return entries.findById(id);
    }

    @Transactional(propagation = Propagation.REQUIRES_NEW)
    public void addInOwnTransaction(String id, int amount) {
        entries.save(new Entry(id, amount));
    }

    /** Fails after a write: marks the transaction it joined rollback-only. */
    @Transactional
    public void addThenFail(String id) {
        entries.saveAndFlush(new Entry(id, 1));
        throw new IllegalStateException("refused " + id);
    }

    /** The outbox: the entry and the message commit together, or neither does. */
    @Transactional
    public MessageId open(String id, boolean fail) {
        entries.save(new Entry(id, 0));
        MessageId message = coop.launch(JpaSagas.OPENED, id);
        if (fail) {
            throw new IllegalStateException("refused " + id);
        }
        return message;
    }
}
