import { Link, useLocation } from "wouter";
import { Page } from "../ui/page";

export default function NotFoundPage() {
  const [location] = useLocation();
  return (
    <Page title="Page not found">
      <p>
        There is no page at <code>{location}</code>. <Link href="/">Go to the fleet</Link>.
      </p>
    </Page>
  );
}
