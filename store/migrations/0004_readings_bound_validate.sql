-- See 0003. VALIDATE takes SHARE UPDATE EXCLUSIVE: inserts go on while it
-- scans.
ALTER TABLE readings VALIDATE CONSTRAINT readings_before_partitioning;
